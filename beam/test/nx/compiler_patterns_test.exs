if Code.ensure_loaded?(Nx) do
  defmodule Emily.CompilerPatternsTest.Fns do
    # Axon's and Bumblebee's expressions, written out as those libraries
    # write them (Axon.Layers.layer_norm with Axon.Shared.normalize,
    # Axon.Activations.softmax, Bumblebee.Layers.rms_norm with upcast
    # :normalization): the engine graph's pattern pass recognizes them
    # (src/graph/patterns.c)
    import Nx.Defn

    defn axon_layer_norm(input, gamma, beta) do
      gamma = Nx.reshape(gamma, {1, 1, Nx.size(gamma)})
      beta = Nx.reshape(beta, {1, 1, Nx.size(beta)})
      mean = Nx.mean(input, axes: [-1], keep_axes: true)
      var = Nx.variance(input, axes: [-1], keep_axes: true)
      eps = 1.0e-5
      scale = gamma * Nx.select(var >= eps, Nx.rsqrt(var + eps), Nx.rsqrt(eps))
      scale * (input - mean) + beta
    end

    defn axon_softmax(x) do
      max_val = stop_grad(Nx.reduce_max(x, axes: [-1], keep_axes: true))
      stable_exp = Nx.exp(x - max_val)
      Nx.divide(1, Nx.sum(stable_exp, axes: [-1], keep_axes: true)) * stable_exp
    end

    defn bumblebee_rms_norm(input, weight) do
      normalized =
        input
        |> Nx.as_type(:f32)
        |> then(fn x ->
          x * Nx.rsqrt(Nx.mean(Nx.pow(x, 2), axes: [-1], keep_axes: true) + 1.0e-6)
        end)
        |> Nx.as_type(Nx.type(input))

      normalized * (0.0 + weight)
    end

    # Bumblebee.Layers.attention_weights_impl and attention_output_impl
    # (no head mask, no bias input, dropout 0: inference), with the key
    # and value heads repeated as Bumblebee's transformer does for
    # grouped-query attention (Bumblebee.Utils.Nx.repeat_interleave)
    defn bumblebee_attention(query, key, value, key_mask, opts \\ []) do
      opts = keyword!(opts, causal: false, groups: 1)
      key = repeat_heads(key, opts[:groups])
      value = repeat_heads(value, opts[:groups])
      query = Nx.transpose(query, axes: [0, 2, 1, 3])
      key = Nx.transpose(key, axes: [0, 2, 1, 3])
      weights = Nx.dot(query, [3], [0, 1], key, [3], [0, 1])
      depth = Nx.axis_size(query, -1)
      weights = weights * (1 / Nx.as_type(Nx.sqrt(depth), Nx.type(query)))
      key_mask = key_mask |> Nx.new_axis(1) |> Nx.new_axis(1)

      causal_mask =
        case opts[:causal] do
          false ->
            Nx.broadcast(1, {1, 1})

          true ->
            Nx.greater_equal(
              Nx.iota({Nx.axis_size(query, 2), 1}),
              Nx.iota({1, Nx.axis_size(key, 2)})
            )
        end
        |> Nx.new_axis(0)
        |> Nx.new_axis(0)

      mask = key_mask and causal_mask

      bias =
        Nx.select(
          mask,
          Nx.tensor(0.0, type: Nx.type(query)),
          Nx.Constants.min_finite(Nx.type(query))
        )

      weights = axon_softmax(weights + bias)
      value = Nx.transpose(value, axes: [0, 2, 1, 3])
      out = Nx.dot(weights, [3], [0, 1], value, [2], [0, 1])
      Nx.transpose(out, axes: [0, 2, 1, 3])
    end

    deftransformp repeat_heads(tensor, times) do
      if times == 1 do
        tensor
      else
        tensor
        |> Nx.new_axis(3)
        |> Nx.tile([1, 1, 1, times, 1])
        |> Nx.flatten(axes: [2, 3])
      end
    end

    # a near miss: the exponentials are a second result
    defn softmax_and_exp(x) do
      e = Nx.exp(x - Nx.reduce_max(x, axes: [-1], keep_axes: true))
      {Nx.divide(1, Nx.sum(e, axes: [-1], keep_axes: true)) * e, e}
    end
  end

  defmodule Emily.CompilerPatternsTest do
    use Emily.Test.NxCase, async: false

    alias Emily.CompilerPatternsTest.Fns

    def handle_pattern(_event, measurements, meta, pid),
      do: send(pid, {:pattern, meta.pattern, measurements.count})

    defp with_patterns_seen(fun) do
      id = "compiler-patterns-test-#{inspect(make_ref())}"
      :telemetry.attach(id, [:emily, :compiler, :pattern], &__MODULE__.handle_pattern/4, self())

      try do
        fun.()
      after
        :telemetry.detach(id)
      end
    end

    defp jit(fun, opts \\ []), do: Nx.Defn.jit(fun, Keyword.put(opts, :compiler, Emily.Compiler))
    defp eval(fun), do: Nx.Defn.jit(fun, compiler: Nx.Defn.Evaluator)

    defp key, do: Nx.Random.key(42)

    defp uniform(shape, type, lo, hi) do
      {t, _} = Nx.Random.uniform(key(), lo, hi, shape: shape, type: type)
      t
    end

    # |a - b| <= tol * (1 + |b|) elementwise (tol 0: the same bytes)
    defp assert_close(a, b, tol) do
      assert a.type == b.type and a.shape == b.shape

      if tol == 0 do
        assert Nx.to_binary(a) == Nx.to_binary(b)
      else
        bound = Nx.multiply(Nx.add(Nx.abs(b), 1), tol)
        assert Nx.to_number(Nx.all(Nx.less_equal(Nx.abs(Nx.subtract(a, b)), bound))) == 1
      end
    end

    defp stats do
      assert {:graph, stats} = Emily.Compiler.last_run()
      stats
    end

    test "Axon's layer norm becomes one layer_norm call, within a few ulp of the evaluator" do
      x = uniform({2, 5, 64}, :f32, -3.0, 5.0)
      g = uniform({64}, :f32, -2.0, 2.0)
      b = uniform({64}, :f32, -2.0, 2.0)

      with_patterns_seen(fn ->
        y = jit(&Fns.axon_layer_norm/3).(x, g, b)
        assert_received {:pattern, :layer_norm, 1}
        assert %{pattern_layer_norm: 1, patterns: 1} = stats()
        # the composed rsqrt is the CPU's SIMD one, the kernel's the
        # rounded double: a few ulp (docs/graph.md)
        assert_close(y, eval(&Fns.axon_layer_norm/3).(x, g, b), 8 * 2.0 ** -24)
      end)
    end

    test "Axon's softmax becomes one softmax call, the evaluator's bits" do
      for type <- [:f32, :bf16, :f16] do
        x = uniform({3, 4, 50}, type, -10.0, 10.0)

        with_patterns_seen(fn ->
          y = jit(&Fns.axon_softmax/1).(x)
          assert_received {:pattern, :softmax, 1}
          assert %{pattern_softmax: 1} = stats()
          assert_close(y, eval(&Fns.axon_softmax/1).(x), 0)
        end)
      end
    end

    test "Bumblebee's rms norm becomes one rms_norm call" do
      for {type, tol} <- [{:f32, 8 * 2.0 ** -24}, {:bf16, 2.0 ** -7}] do
        x = uniform({2, 7, 48}, type, -3.0, 5.0)
        w = uniform({48}, type, -2.0, 2.0)

        with_patterns_seen(fn ->
          y = jit(&Fns.bumblebee_rms_norm/2).(x, w)
          assert_received {:pattern, :rms_norm, 1}
          assert %{pattern_rms_norm: 1} = stats()
          # an ulp of r may move a bf16 normalized value by one bf16 ulp
          assert_close(y, eval(&Fns.bumblebee_rms_norm/2).(x, w), tol)
        end)
      end
    end

    test "patterns: false keeps the composed calls, bit for bit the evaluator's" do
      x = uniform({2, 5, 64}, :f32, -3.0, 5.0)
      g = uniform({64}, :f32, -2.0, 2.0)

      with_patterns_seen(fn ->
        y = jit(&Fns.axon_layer_norm/3, patterns: false).(x, g, g)
        refute_received {:pattern, _, _}
        assert %{patterns: 0, pattern_layer_norm: 0} = stats()
        assert_close(y, eval(&Fns.axon_layer_norm/3).(x, g, g), 0)
      end)
    end

    # the dots' order (BLAS in both, another blocking) and the
    # probabilities as E / Z where Axon takes (1 / Z) * E: a few ulp
    # (docs/graph.md; 1.6 ulp measured in tests/unit/test_graph_patterns.c).
    # The kernel's dots are BLAS's: the dots must be :fast (this suite
    # runs at :highest, see test_helper.exs).
    test "Bumblebee's attention becomes one sdpa call" do
      q = uniform({2, 12, 4, 16}, :f32, -2.0, 2.0)
      # batch 1 pads its last 5 keys
      mask =
        Nx.tensor([List.duplicate(1, 12), List.duplicate(1, 7) ++ List.duplicate(0, 5)],
          type: :u32
        )

      for {opts, kv_heads} <- [{[], 4}, {[causal: true, groups: 2], 2}] do
        k = uniform({2, 12, kv_heads, 16}, :f32, -2.0, 2.0)
        v = uniform({2, 12, kv_heads, 16}, :f32, -1.0, 3.0)
        fun = &Fns.bumblebee_attention(&1, &2, &3, &4, opts)

        with_patterns_seen(fn ->
          y = jit(fun, dot_precision: :fast).(q, k, v, mask)
          assert_received {:pattern, :attention, 1}
          # the softmax it holds counts as the attention
          refute_received {:pattern, :softmax, _}
          assert %{pattern_attention: 1, pattern_softmax: 0, patterns: 1} = stats()
          off = jit(fun, dot_precision: :fast, patterns: false).(q, k, v, mask)
          refute_received {:pattern, _, _}
          assert %{patterns: 0} = stats()
          assert_close(y, off, 4 * 2.0 ** -24)
          evaluated = Emily.with_dot_precision(:fast, fn -> eval(fun).(q, k, v, mask) end)
          assert_close(y, evaluated, 4 * 2.0 ** -24)
        end)
      end
    end

    test "attention with :highest dots stays composed (the kernel's dots are BLAS's)" do
      q = uniform({1, 8, 2, 16}, :f32, -2.0, 2.0)
      mask = Nx.broadcast(Nx.tensor(1, type: :u32), {1, 8})

      with_patterns_seen(fn ->
        y = jit(&Fns.bumblebee_attention/4, dot_precision: :highest).(q, q, q, mask)
        refute_received {:pattern, :attention, _}
        assert %{pattern_attention: 0, pattern_softmax: 1} = stats()

        evaluated =
          Emily.with_dot_precision(:highest, fn ->
            eval(&Fns.bumblebee_attention/4).(q, q, q, mask)
          end)

        assert_close(y, evaluated, 0)
      end)
    end

    test "bf16 attention stays composed (Bumblebee rounds the scores to bf16)" do
      q = uniform({1, 8, 2, 16}, :bf16, -2.0, 2.0)
      mask = Nx.broadcast(Nx.tensor(1, type: :u32), {1, 8})

      with_patterns_seen(fn ->
        jit(&Fns.bumblebee_attention/4, dot_precision: :fast).(q, q, q, mask)
        refute_received {:pattern, :attention, _}
        assert %{pattern_attention: 0, pattern_softmax: 1} = stats()
      end)
    end

    test "a match whose intermediate is also a result stays composed" do
      x = uniform({4, 30}, :f32, -10.0, 10.0)

      with_patterns_seen(fn ->
        {y, e} = jit(&Fns.softmax_and_exp/1).(x)
        refute_received {:pattern, _, _}
        assert %{patterns: 0} = stats()
        {y2, e2} = eval(&Fns.softmax_and_exp/1).(x)
        assert_close(y, y2, 0)
        assert_close(e, e2, 0)
      end)
    end
  end
end

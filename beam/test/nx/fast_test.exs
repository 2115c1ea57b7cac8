if Code.ensure_loaded?(Nx) do
  defmodule Emily.FastTest do
    # Emily.Fast on Emily.Backend (eager, and compiled by Emily.Compiler)
    # against the composed fallback evaluated on Nx.BinaryBackend in a
    # process of its own, with no Emily in it: the reference never runs on
    # the backend under test (an upstream project's fallback bug went
    # unnoticed when it did). And the fallback itself against Axon's and
    # Bumblebee's expressions, written out here. (Nx has no empty tensors;
    # the engine's own tests cover them.)
    use Emily.Test.NxCase, async: false

    ## Inputs and the reference

    # Values in [lo, lo + width) of `type`, made on Nx.BinaryBackend from a
    # seeded generator (the same on every run).
    defp rand(type, shape, seed, lo \\ -4.0, width \\ 8.0),
      do: Emily.Test.SeededTensor.uniform(type, shape, {seed, 7, 11}, lo, width)

    defp on_emily(t), do: Nx.backend_copy(t, Emily.Backend)

    # The composed form on Nx.BinaryBackend in a process of its own
    # (test/support/fast_reference.ex); {type, shape, bytes}.
    defp reference(inputs, fun), do: Emily.Test.FastReference.run(inputs, fun, 60_000)

    defp from_wire(wire), do: Emily.Test.FastReference.from_wire(wire)

    # Element by element within `ulps` of the result type (NaN matches NaN)
    # plus `atol`; returns how many elements differ in their bits (NaNs
    # aside).
    defp close!(got, want, ulps, atol \\ 0.0) do
      want = if is_tuple(want), do: from_wire(want), else: want
      assert got.type == want.type
      assert got.shape == want.shape
      got_bits = bits(got)
      want_bits = bits(want)
      eps = ulp(got.type)

      got
      |> Nx.to_flat_list()
      |> Enum.zip(Nx.to_flat_list(want))
      |> Enum.zip(Enum.zip(got_bits, want_bits))
      |> Enum.count(fn {{a, b}, {ba, bb}} ->
        cond do
          # NaN's sign and payload are not compared (x86's inf - inf is -NaN,
          # Nx.BinaryBackend writes +NaN)
          ba == bb or (a == :nan and b == :nan) ->
            false

          a == b ->
            true

          is_number(a) and is_number(b) ->
            assert abs(a - b) <= ulps * eps * abs(b) + atol,
                   "#{a} != #{b} (#{ulps} ulps of #{inspect(got.type)} + #{atol})"

            true

          true ->
            flunk("#{inspect(a)} != #{inspect(b)}")
        end
      end)
    end

    defp bits(t) do
      {_, size} = t.type
      for <<b::size(size) <- Nx.to_binary(t)>>, do: b
    end

    defp ulp({:f, 64}), do: :math.pow(2, -52)
    defp ulp({:f, 32}), do: :math.pow(2, -23)
    defp ulp({:f, 16}), do: :math.pow(2, -10)
    defp ulp({:bf, 16}), do: :math.pow(2, -7)

    # The engine sums each row in 32 double lanes, Nx.BinaryBackend in
    # index order: f32 (and f16/bf16, computed in f32) rows then round to the
    # same statistics nearly always, f64 rows to within a few ULP (and an
    # output near zero keeps the mean's absolute error). On Nx 0.7 (no
    # Nx.block) Emily runs the fallback's ops one by one: its f32 rsqrt is
    # within an ULP of the reference's and its sums are in lanes, so a few
    # ULP, and near zero the mean's error.
    @block? function_exported?(Nx, :block, 4)
    @ulps if @block?, do: 2, else: 8
    @atol if @block?, do: 0.0, else: 1.0e-5
    defp tolerance({:f, 64}), do: {64, 1.0e-13}
    defp tolerance(_), do: {@ulps, @atol}

    # The fused kernel has the reference's bits for f32/f16/bf16 (nearly
    # always: see above); a composed run on Nx 0.7 does not.
    defp few_differ!(type, differ, size) do
      if @block? and type != {:f, 64}, do: assert(differ * 1000 <= size, "#{differ} differ")
    end

    # One engine call where Nx.block is, the fallback's ops elsewhere.
    defp assert_lowered! do
      if @block?,
        do: assert({:graph, %{calls: 1}} = Emily.Compiler.last_run()),
        else: assert({:graph, %{calls: calls}} = Emily.Compiler.last_run()) && assert(calls > 1)
    end

    @types [{:f, 32}, {:f, 64}, {:f, 16}, {:bf, 16}]
    @shapes [{1, 1}, {4, 16}, {2, 3, 100}, {7, 384}, {3, 1000}]

    # Without Nx.block (Nx 0.7) the compiled function is the composed
    # fallback, which these tests compare with the same composition run
    # eagerly, bit for bit: pattern fusion, which would swap in the fused
    # kernels (their own rounding, docs/graph.md), is off there; it has
    # tests of its own (compiler_patterns_test.exs).
    defp jit(fun), do: Nx.Defn.jit(fun, compiler: Emily.Compiler, patterns: @block?)

    ## Against the fallback on Nx.BinaryBackend

    test "layer_norm: eager and compiled Emily against the fallback on Nx.BinaryBackend" do
      for type <- @types, {shape, k} <- Enum.with_index(@shapes), beta? <- [true, false] do
        n = elem(shape, tuple_size(shape) - 1)
        x = rand(type, shape, 10 + k, -2.0 + k, 8.0)
        g = rand(type, {n}, 20 + k, -2.0, 4.0)
        b = if beta?, do: rand(type, {n}, 30 + k, -1.0, 2.0)
        want = reference([x, g, b], &Emily.Fast.layer_norm(&1, &2, &3, epsilon: 1.0e-5))
        {ulps, atol} = tolerance(type)
        {xe, ge, be} = {on_emily(x), on_emily(g), b && on_emily(b)}

        eager = Emily.Fast.layer_norm(xe, ge, be, epsilon: 1.0e-5)
        assert %Emily.Backend{} = eager.data
        differ = close!(eager, want, ulps, atol)
        few_differ!(type, differ, Nx.size(x))

        compiled =
          if beta?,
            do: jit(&Emily.Fast.layer_norm(&1, &2, &3, epsilon: 1.0e-5)).(xe, ge, be),
            else: jit(&Emily.Fast.layer_norm(&1, &2, nil, epsilon: 1.0e-5)).(xe, ge)

        assert_lowered!()
        assert Nx.to_binary(compiled) == Nx.to_binary(eager)
      end
    end

    test "rms_norm: eager and compiled Emily against the fallback on Nx.BinaryBackend" do
      for type <- @types, {shape, k} <- Enum.with_index(@shapes) do
        n = elem(shape, tuple_size(shape) - 1)
        x = rand(type, shape, 40 + k, -3.0 + k, 8.0)
        g = rand(type, {n}, 50 + k, -2.0, 4.0)
        want = reference([x, g], &Emily.Fast.rms_norm(&1, &2, epsilon: 1.0e-6))
        {ulps, atol} = tolerance(type)
        {xe, ge} = {on_emily(x), on_emily(g)}

        eager = Emily.Fast.rms_norm(xe, ge, epsilon: 1.0e-6)
        differ = close!(eager, want, ulps, atol)
        few_differ!(type, differ, Nx.size(x))

        compiled = jit(&Emily.Fast.rms_norm(&1, &2, epsilon: 1.0e-6)).(xe, ge)
        assert_lowered!()
        assert Nx.to_binary(compiled) == Nx.to_binary(eager)
      end
    end

    test "mixed types: the result has the merged type, on every path" do
      cases = [
        {{:bf, 16}, {:f, 32}, {:f, 32}, {:f, 32}},
        {{:f, 16}, {:bf, 16}, {:bf, 16}, {:f, 16}},
        {{:f, 32}, {:f, 64}, {:f, 32}, {:f, 64}},
        {{:bf, 16}, {:f, 64}, {:f, 16}, {:f, 64}}
      ]

      for {{xt, gt, bt, out}, k} <- Enum.with_index(cases) do
        x = rand(xt, {5, 70}, 60 + k)
        g = rand(gt, {70}, 70 + k, -2.0, 4.0)
        b = rand(bt, {70}, 80 + k, -1.0, 2.0)
        want = reference([x, g, b], &Emily.Fast.layer_norm(&1, &2, &3))
        got = Emily.Fast.layer_norm(on_emily(x), on_emily(g), on_emily(b))
        assert got.type == out
        close!(got, want, @ulps, @atol)

        want = reference([x, g], &Emily.Fast.rms_norm(&1, &2))
        got = Emily.Fast.rms_norm(on_emily(x), on_emily(g))
        assert got.type == Nx.Type.merge(xt, gt)
        close!(got, want, @ulps, @atol)
      end
    end

    test "edge values: NaN, infinity, constant rows, eps 0, rows of one" do
      x =
        Nx.tensor(
          [
            [1.0, :nan, 2.0],
            [1.0, :infinity, 2.0],
            [7.0, 7.0, 7.0],
            [0.0, 0.0, 0.0],
            [1.0, 2.0, 4.0]
          ],
          backend: Nx.BinaryBackend
        )

      g = Nx.tensor([1.0, 2.0, 3.0], backend: Nx.BinaryBackend)
      b = Nx.tensor([0.5, 0.0, -0.5], backend: Nx.BinaryBackend)

      want = reference([x, g, b], &Emily.Fast.layer_norm(&1, &2, &3))
      got = Emily.Fast.layer_norm(on_emily(x), on_emily(g), on_emily(b))
      differ = close!(got, want, @ulps, @atol)
      if @block?, do: assert(differ == 0)
      want = reference([x, g], &Emily.Fast.rms_norm(&1, &2))
      differ = close!(Emily.Fast.rms_norm(on_emily(x), on_emily(g)), want, @ulps)
      if @block?, do: assert(differ == 0)

      # eps 0: Nx.BinaryBackend raises on rsqrt(0) (the fallback computes
      # rsqrt(eps)); the engine follows IEEE arithmetic
      assert_raise ArithmeticError, fn ->
        Nx.with_default_backend(Nx.BinaryBackend, fn ->
          Emily.Fast.layer_norm(x, g, b, epsilon: 0.0)
        end)
      end

      # constant rows give beta; with eps 0 they are NaN (rsqrt(0) * 0)
      y = Emily.Fast.layer_norm(on_emily(x), on_emily(g), on_emily(b))
      assert Nx.to_list(y[2]) == [0.5, 0.0, -0.5]
      y0 = Emily.Fast.layer_norm(on_emily(x), on_emily(g), on_emily(b), epsilon: 0.0)
      assert Nx.to_list(y0[2]) == [:nan, :nan, :nan]

      one = Nx.tensor([[3.0], [-2.0]])

      assert Nx.to_list(Emily.Fast.layer_norm(one, Nx.tensor([2.0]), Nx.tensor([0.25]))) == [
               [0.25],
               [0.25]
             ]
    end

    test "f64: eps is exact (not first an f32), eager and in defn" do
      x = rand({:f, 64}, {6, 50}, 300, -0.5, 1.0)
      g = rand({:f, 64}, {50}, 301, 0.5, 1.0)
      want = reference([x, g], &Emily.Fast.layer_norm(&1, &2, nil, epsilon: 0.1))
      close!(Emily.Fast.layer_norm(on_emily(x), on_emily(g), nil, epsilon: 0.1), want, 64, 1.0e-13)
      want = reference([x, g], &Emily.Fast.rms_norm(&1, &2, epsilon: 0.1))

      close!(
        jit(&Emily.Fast.rms_norm(&1, &2, epsilon: 0.1)).(on_emily(x), on_emily(g)),
        want,
        64,
        1.0e-13
      )

      # the fallback in defn on Nx.BinaryBackend (constants exact there) agrees
      defn_want =
        reference([x, g], fn x, g ->
          Nx.Defn.jit(&Emily.Fast.rms_norm(&1, &2, epsilon: 0.1), compiler: Nx.Defn.Evaluator).(
            x,
            g
          )
        end)

      close!(from_wire(want), defn_want, 0)
    end

    test "vectorized x is normalized per entry; names are kept" do
      x = rand({:f, 32}, {3, 2, 8}, 90) |> on_emily()
      g = rand({:f, 32}, {8}, 91) |> on_emily()
      v = Nx.vectorize(x, :batch)
      y = Emily.Fast.layer_norm(v, g, nil)
      assert y.vectorized_axes == [batch: 3]
      assert Nx.to_binary(Nx.devectorize(y)) == Nx.to_binary(Emily.Fast.layer_norm(x, g, nil))

      named = Nx.rename(x, [:a, :b, :c])
      assert Emily.Fast.rms_norm(named, g).names == [:a, :b, :c]

      assert_raise ArgumentError, ~r/gamma must not be vectorized/, fn ->
        Emily.Fast.rms_norm(x, Nx.vectorize(Nx.broadcast(g, {2, 8}), :v))
      end
    end

    test "bad arguments raise before any backend runs" do
      x = Nx.iota({2, 3}, type: :f32)
      g = Nx.iota({3}, type: :f32)

      assert_raise ArgumentError,
                   "Emily.Fast.layer_norm: x must be a float tensor (f16, bf16, f32 or f64), got s32",
                   fn -> Emily.Fast.layer_norm(Nx.iota({2, 3}, type: :s32), g, nil) end

      assert_raise ArgumentError, ~r/rms_norm: gamma must be a float tensor.*got c64/, fn ->
        Emily.Fast.rms_norm(x, Nx.iota({3}, type: :c64))
      end

      assert_raise ArgumentError,
                   "Emily.Fast.layer_norm: beta must have shape {3} (the last axis of x, {2, 3}), got {1, 3}",
                   fn -> Emily.Fast.layer_norm(x, g, Nx.iota({1, 3}, type: :f32)) end

      assert_raise ArgumentError, ~r/gamma must have shape \{3\}.*got \{4\}/, fn ->
        Emily.Fast.rms_norm(x, Nx.iota({4}, type: :f32))
      end

      assert_raise ArgumentError, ~r/x must have rank 1 or more/, fn ->
        Emily.Fast.rms_norm(Nx.tensor(1.0), g)
      end

      assert_raise ArgumentError, ~r/:epsilon must be a number, got: :small/, fn ->
        Emily.Fast.rms_norm(x, g, epsilon: :small)
      end

      assert_raise ArgumentError, ~r/unknown keys \[:eps\]/, fn ->
        Emily.Fast.layer_norm(x, g, nil, eps: 1.0)
      end
    end

    ## Gradients: the fallback's, on every path

    test "gradients through Emily.Compiler equal the evaluator's on Nx.BinaryBackend" do
      x = rand({:f, 32}, {3, 24}, 100)
      g = rand({:f, 32}, {24}, 101, 0.5, 1.0)
      b = rand({:f, 32}, {24}, 102)
      w = rand({:f, 32}, {3, 24}, 103)

      loss = fn x, g, b, w ->
        Nx.Defn.grad({x, g, b}, fn {x, g, b} ->
          y = Emily.Fast.layer_norm(x, g, b) |> Nx.multiply(w)
          z = Emily.Fast.rms_norm(y, g)
          Nx.sum(Nx.multiply(z, z))
        end)
      end

      {gx, gg, gb} = jit(loss).(on_emily(x), on_emily(g), on_emily(b), on_emily(w))

      want =
        reference([x, g, b, w], fn x, g, b, w ->
          {gx, gg, gb} = Nx.Defn.jit(loss, compiler: Nx.Defn.Evaluator).(x, g, b, w)
          Nx.concatenate([Nx.flatten(gx), gg, gb])
        end)

      got = Nx.concatenate([Nx.flatten(gx), gg, gb])
      close!(got, want, 64, 1.0e-5)
    end

    ## The fallback against Axon's and Bumblebee's expressions

    # Axon.Layers.layer_norm (channel_index -1) with Axon.Shared's
    # mean_and_variance and normalize, written out with Nx functions.
    defp axon_layer_norm(x, gamma, beta, eps) do
      mean = Nx.mean(x, axes: [-1], keep_axes: true)
      var = Nx.variance(x, axes: [-1], keep_axes: true)

      scale =
        Nx.multiply(
          gamma,
          Nx.select(Nx.greater_equal(var, eps), Nx.rsqrt(Nx.add(var, eps)), Nx.rsqrt(eps))
        )

      Nx.add(Nx.multiply(scale, Nx.subtract(x, mean)), beta)
    end

    # Bumblebee.Layers.rms_norm with upcast: :normalization, shift 0.0.
    defp bumblebee_rms_norm(x, weight, eps) do
      xf = Nx.as_type(x, :f32)
      variance = xf |> Nx.pow(2) |> Nx.mean(axes: [-1], keep_axes: true)
      normalized = xf |> Nx.multiply(Nx.rsqrt(Nx.add(variance, eps))) |> Nx.as_type(Nx.type(x))
      Nx.multiply(normalized, Nx.add(0.0, weight))
    end

    test "on Nx.BinaryBackend the fallback is Axon's layer_norm and Bumblebee's rms_norm" do
      for {shape, k} <- Enum.with_index([{4, 16}, {2, 3, 100}, {5, 384}]) do
        n = elem(shape, tuple_size(shape) - 1)
        x = rand({:f, 32}, shape, 200 + k, -1.0 + k, 6.0)
        g = rand({:f, 32}, {n}, 210 + k, -2.0, 4.0)
        b = rand({:f, 32}, {n}, 220 + k)

        mine = reference([x, g, b], &Emily.Fast.layer_norm(&1, &2, &3, epsilon: 1.0e-5))
        assert mine == reference([x, g, b], &axon_layer_norm(&1, &2, &3, 1.0e-5))

        # and what Nx.block runs there is the fallback
        assert mine ==
                 reference([x, g, b], fn x, g, b ->
                   Emily.Fast.fallback(%Emily.Fast.LayerNorm{epsilon: 1.0e-5}, [x, g, b])
                 end)

        for type <- [{:f, 16}, {:bf, 16}] do
          [xh, gh, bh] = Enum.map([x, g, b], &Nx.as_type(&1, type))
          mine = reference([xh, gh, bh], &Emily.Fast.layer_norm(&1, &2, &3))

          # Axon's expression on inputs upcast to f32, rounded once: the same
          upcast =
            reference([xh, gh, bh], fn x, g, b ->
              [x, g, b] = Enum.map([x, g, b], &Nx.as_type(&1, :f32))
              x |> axon_layer_norm(g, b, 1.0e-5) |> Nx.as_type(type)
            end)

          assert mine == upcast

          # Axon's own, rounding to the input type after every step (its
          # rsqrt(eps) of a number is f32, which makes its result f32): close
          axon = reference([xh, gh, bh], &axon_layer_norm(&1, &2, &3, 1.0e-5))
          close!(from_wire(mine), Nx.as_type(from_wire(axon), type), 16, 0.1)
        end

        for type <- [{:f, 32}, {:f, 16}, {:bf, 16}] do
          [xh, gh] = Enum.map([x, g], &Nx.as_type(&1, type))
          mine = reference([xh, gh], &Emily.Fast.rms_norm(&1, &2, epsilon: 1.0e-6))
          bumblebee = reference([xh, gh], &bumblebee_rms_norm(&1, &2, 1.0e-6))
          # the same values (Bumblebee's 0.0 + weight makes a -0.0 weight +0.0)
          assert Nx.to_flat_list(from_wire(mine)) == Nx.to_flat_list(from_wire(bumblebee))
        end
      end
    end
  end
end

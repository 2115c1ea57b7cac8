if Code.ensure_loaded?(Nx) do
  defmodule Emily.FastSDPATest do
    # Emily.Fast.scaled_dot_product_attention on Emily.Backend (eager, and
    # compiled by Emily.Compiler) against its composed fallback evaluated
    # on Nx.BinaryBackend in a process of its own that runs no Emily
    # callback (as fast_test.exs does for the norms: an upstream project's
    # fallback built an anti-causal mask, unnoticed because its reference
    # ran on the backend under test); and the fallback against Bumblebee's
    # attention expression written out here.
    use Emily.Test.NxCase, async: false

    defp rand(type, shape, seed, lo \\ -1.0, width \\ 2.0),
      do: Emily.Test.SeededTensor.uniform(type, shape, {seed, 5, 3}, lo, width)

    defp keep_mask(shape, seed) do
      :rand.seed(:exsss, {seed, 9, 1})
      n = Enum.reduce(Tuple.to_list(shape), 1, &(&1 * &2))
      values = for _ <- 1..n, do: if(:rand.uniform() < 0.75, do: 1, else: 0)
      values |> Nx.tensor(type: :u8, backend: Nx.BinaryBackend) |> Nx.reshape(shape)
    end

    defp on_emily(nil), do: nil
    defp on_emily(t), do: Nx.backend_copy(t, Emily.Backend)

    # fun on copies of inputs on Nx.BinaryBackend in a process of its own
    # (test/support/fast_reference.ex)
    defp reference(inputs, fun),
      do: inputs |> Emily.Test.FastReference.run(fun) |> Emily.Test.FastReference.from_wire()

    # The engine's two dots sum in the work type in BLAS's order, the
    # reference's in f64: scores differ by ~D * 2^-24 relatively, which
    # moves f32 results by a few 1e-7 and can flip the rounding of a
    # probability to f16/bf16 (an ULP of p times |v|) and of the output
    # (an ULP of the output). Returns how many elements differ at all.
    defp close!(got, want, type) do
      assert got.type == want.type
      assert got.shape == want.shape

      atol =
        case type do
          {:f, 64} -> 1.0e-12
          {:f, 32} -> 2.0e-6
          {:f, 16} -> 2.0e-3
          {:bf, 16} -> 1.6e-2
        end

      got
      |> Nx.to_flat_list()
      |> Enum.zip(Nx.to_flat_list(Nx.backend_copy(want, Nx.BinaryBackend)))
      |> Enum.count(fn
        {a, a} ->
          false

        {a, b} when is_number(a) and is_number(b) ->
          assert abs(a - b) <= atol, "#{a} != #{b} (tolerance #{atol})"
          true

        {a, b} ->
          flunk("#{inspect(a)} != #{inspect(b)}")
      end)
    end

    defp jit(fun), do: Nx.Defn.jit(fun, compiler: Emily.Compiler)

    @block? function_exported?(Nx, :block, 4)

    defp assert_lowered! do
      if @block?, do: assert({:graph, %{calls: 1}} = Emily.Compiler.last_run())
    end

    # {label, {B, Hq, Hkv, Sq, Skv, D, Dv}, options builder}
    defp cases do
      [
        {"plain", {2, 2, 2, 7, 7, 16, 16}, fn _ -> [] end},
        {"decode", {1, 4, 4, 1, 9, 16, 8}, fn _ -> [] end},
        {"causal kv cache", {1, 2, 2, 5, 12, 16, 16}, fn _ -> [causal: true] end},
        {"causal square", {2, 2, 1, 9, 9, 8, 8}, fn _ -> [causal: true, scale: 0.3] end},
        {"causal rows with no key", {1, 1, 1, 6, 3, 8, 8}, fn _ -> [causal: true] end},
        {"gqa", {1, 8, 2, 6, 6, 16, 16}, fn _ -> [] end},
        {"additive key mask", {2, 2, 2, 4, 6, 16, 16},
         fn s -> [mask: rand({:f, 32}, {2, 1, 1, 6}, s, -2.0, 2.0)] end},
        {"boolean mask", {2, 2, 2, 4, 6, 16, 16}, fn s -> [mask: keep_mask({4, 6}, s)] end},
        {"boolean mask, causal", {2, 2, 2, 6, 6, 16, 16},
         fn s -> [mask: keep_mask({2, 1, 6, 6}, s), causal: true] end},
        {"sinks", {1, 4, 2, 5, 7, 16, 16}, fn s -> [sinks: rand({:f, 32}, {4}, s, -1.0, 3.0)] end},
        {"sinks, mask, causal", {2, 2, 2, 5, 5, 16, 16},
         fn s ->
           [sinks: rand({:f, 32}, {2}, s), mask: keep_mask({5, 5}, s + 1), causal: true]
         end}
      ]
    end

    defp inputs(type, {b, hq, hkv, sq, skv, d, dv}, seed) do
      {rand(type, {b, hq, sq, d}, seed), rand(type, {b, hkv, skv, d}, seed + 1),
       rand(type, {b, hkv, skv, dv}, seed + 2)}
    end

    test "eager and compiled Emily against the fallback on Nx.BinaryBackend" do
      for type <- [{:f, 32}, {:f, 16}, {:bf, 16}, {:f, 64}],
          {{label, dims, opts_of}, k} <- Enum.with_index(cases()) do
        {q, kk, v} = inputs(type, dims, 10 * k)
        opts = opts_of.(100 + k)
        mask = opts[:mask]
        sinks = opts[:sinks]
        rest = Keyword.drop(opts, [:mask, :sinks])

        call = fn q, k, v, mask, sinks ->
          Emily.Fast.scaled_dot_product_attention(q, k, v, rest ++ [mask: mask, sinks: sinks])
        end

        want = reference([q, kk, v, mask, sinks], call)
        [qe, ke, ve, me, se] = Enum.map([q, kk, v, mask, sinks], &on_emily/1)

        eager = call.(qe, ke, ve, me, se)
        assert %Emily.Backend{} = eager.data, label
        close!(eager, want, type)

        args = Enum.reject([qe, ke, ve, me, se], &is_nil/1)

        compiled =
          case {mask, sinks} do
            {nil, nil} -> jit(&call.(&1, &2, &3, nil, nil)).(qe, ke, ve)
            {_, nil} -> jit(&call.(&1, &2, &3, &4, nil)).(qe, ke, ve, me)
            {nil, _} -> jit(&call.(&1, &2, &3, nil, &4)).(qe, ke, ve, se)
            {_, _} -> apply(jit(call), args)
          end

        assert_lowered!()
        assert Nx.to_binary(compiled) == Nx.to_binary(eager), label
      end
    end

    test "rows whose keys are all masked are zero on every path" do
      q = rand({:f, 32}, {1, 2, 3, 4}, 1)
      k = rand({:f, 32}, {1, 2, 3, 4}, 2)
      v = rand({:f, 32}, {1, 2, 3, 4}, 3)
      # row 0 keeps nothing, row 1 key 2 only, row 2 everything
      mask = Nx.tensor([[0, 0, 0], [0, 0, 1], [1, 1, 1]], type: :u8, backend: Nx.BinaryBackend)
      sinks = Nx.tensor([0.5, -0.5], backend: Nx.BinaryBackend)

      for s <- [nil, sinks] do
        call = &Emily.Fast.scaled_dot_product_attention(&1, &2, &3, mask: &4, sinks: &5)
        want = reference([q, k, v, mask, s], call)
        assert Nx.to_flat_list(want[[.., .., 0, ..]]) == List.duplicate(0.0, 8)
        got = call.(on_emily(q), on_emily(k), on_emily(v), on_emily(mask), on_emily(s))
        assert Nx.to_flat_list(got[[.., .., 0, ..]]) == List.duplicate(0.0, 8)
        close!(got, want, {:f, 32})
      end
    end

    # Bumblebee.Layers.attention_weights_impl and attention_output_impl
    # with a key mask and causal (offset 0), written out on {B, H, S, D}
    # (Bumblebee's own layout is {B, S, H, D}; its first step transposes).
    defp bumblebee_attention(q, k, v, key_mask, causal) do
      weights = Nx.dot(q, [3], [0, 1], k, [3], [0, 1])
      depth = Nx.axis_size(q, -1)
      weights = Nx.multiply(weights, Nx.divide(1, Nx.as_type(Nx.sqrt(depth), Nx.type(q))))
      key_mask = key_mask |> Nx.new_axis(1) |> Nx.new_axis(1)
      {sq, skv} = {Nx.axis_size(q, 2), Nx.axis_size(k, 2)}

      causal_mask =
        if causal,
          do: Nx.greater_equal(Nx.iota({sq, 1}), Nx.iota({1, skv})),
          else: Nx.broadcast(1, {1, 1})

      mask = Nx.logical_and(key_mask, causal_mask |> Nx.new_axis(0) |> Nx.new_axis(0))
      bias = Nx.select(mask, Nx.tensor(0.0, type: q.type), Nx.Constants.min_finite(q.type))
      weights = Nx.add(weights, bias)
      # Axon.Activations.softmax
      max = Nx.reduce_max(weights, axes: [-1], keep_axes: true)
      e = Nx.exp(Nx.subtract(weights, max))
      weights = Nx.divide(e, Nx.sum(e, axes: [-1], keep_axes: true))
      Nx.dot(weights, [3], [0, 1], v, [2], [0, 1])
    end

    test "on Nx.BinaryBackend the fallback is Bumblebee's attention (f32, not fully masked)" do
      for causal <- [false, true],
          {{b, h, s, d}, k} <- Enum.with_index([{2, 2, 6, 8}, {1, 3, 9, 16}]) do
        q = rand({:f, 32}, {b, h, s, d}, 400 + k)
        kk = rand({:f, 32}, {b, h, s, d}, 410 + k)
        v = rand({:f, 32}, {b, h, s, d}, 420 + k)
        # every row keeps key 0, so no row is fully masked
        key_mask =
          keep_mask({b, s}, 430 + k)
          |> Nx.put_slice(
            [0, 0],
            Nx.broadcast(Nx.tensor(1, type: :u8, backend: Nx.BinaryBackend), {b, 1})
          )

        mine =
          reference([q, kk, v, key_mask], fn q, k, v, m ->
            Emily.Fast.scaled_dot_product_attention(q, k, v,
              causal: causal,
              mask: m |> Nx.new_axis(1) |> Nx.new_axis(1)
            )
          end)

        bumblebee = reference([q, kk, v, key_mask], &bumblebee_attention(&1, &2, &3, &4, causal))
        # the same up to the scale's rounding (Bumblebee: 1 / f32(sqrt(d));
        # here f32(1 / sqrt(d))) and the order of its divisions
        mine
        |> Nx.subtract(bumblebee)
        |> Nx.abs()
        |> Nx.reduce_max()
        |> Nx.to_number()
        |> then(&assert(&1 < 1.0e-6, "max difference #{&1}"))

        # causal: the first query sees only the first key, so its row is
        # that key's v row exactly (an anti-causal mask would see them all)
        if causal do
          assert Nx.to_flat_list(mine[[.., .., 0, ..]]) == Nx.to_flat_list(v[[.., .., 0, ..]])
        end
      end
    end

    test "gradients (the fallback's) through Emily.Compiler equal the evaluator's on Nx.BinaryBackend" do
      q = rand({:f, 32}, {1, 2, 5, 8}, 500)
      k = rand({:f, 32}, {1, 1, 7, 8}, 501)
      v = rand({:f, 32}, {1, 1, 7, 8}, 502)
      w = rand({:f, 32}, {1, 2, 5, 8}, 503)
      mask = keep_mask({5, 7}, 504)
      sinks = rand({:f, 32}, {2}, 505)

      loss = fn q, k, v, w, mask, sinks ->
        Nx.Defn.grad({q, k, v}, fn {q, k, v} ->
          y =
            Emily.Fast.scaled_dot_product_attention(q, k, v,
              causal: true,
              mask: mask,
              sinks: sinks
            )

          Nx.sum(Nx.multiply(y, w))
        end)
      end

      args = [q, k, v, w, mask, sinks]
      {gq, gk, gv} = apply(jit(loss), Enum.map(args, &on_emily/1))

      want =
        reference(args, fn q, k, v, w, mask, sinks ->
          {gq, gk, gv} = Nx.Defn.jit(loss, compiler: Nx.Defn.Evaluator).(q, k, v, w, mask, sinks)
          Nx.concatenate([Nx.flatten(gq), Nx.flatten(gk), Nx.flatten(gv)])
        end)

      got = Nx.concatenate([Nx.flatten(gq), Nx.flatten(gk), Nx.flatten(gv)])
      close!(got, want, {:f, 32})
    end

    test "bad arguments raise before any backend runs" do
      q = Nx.iota({1, 2, 3, 4}, type: :f32)
      k = Nx.iota({1, 1, 5, 4}, type: :f32)
      name = "Emily.Fast.scaled_dot_product_attention"
      sdpa = &Emily.Fast.scaled_dot_product_attention/4

      assert_raise ArgumentError,
                   "#{name}: q must be a float tensor (f16, bf16, f32 or f64), got s32",
                   fn ->
                     sdpa.(Nx.iota({1, 2, 3, 4}, type: :s32), k, k, [])
                   end

      assert_raise ArgumentError, "#{name}: k must have q's type f32, got bf16", fn ->
        sdpa.(q, Nx.as_type(k, :bf16), k, [])
      end

      assert_raise ArgumentError, ~r/q must have rank 4 \(B, Hq, Sq, D\), got \{2, 3, 4\}/, fn ->
        sdpa.(Nx.iota({2, 3, 4}, type: :f32), k, k, [])
      end

      assert_raise ArgumentError, ~r/Hq a multiple of Hkv/, fn ->
        sdpa.(q, Nx.iota({1, 3, 5, 4}, type: :f32), Nx.iota({1, 3, 5, 4}, type: :f32), [])
      end

      assert_raise ArgumentError, ~r/mask of shape \{3, 4\} does not broadcast/, fn ->
        sdpa.(q, k, k, mask: Nx.iota({3, 4}, type: :f32))
      end

      assert_raise ArgumentError, ~r/mask must be u8.*got s32/, fn ->
        sdpa.(q, k, k, mask: Nx.iota({3, 5}, type: :s32))
      end

      assert_raise ArgumentError, ~r/sinks must be a float tensor of shape \{2\}/, fn ->
        sdpa.(q, k, k, sinks: Nx.iota({3}, type: :f32))
      end

      assert_raise ArgumentError, ~r/:causal must be a boolean/, fn -> sdpa.(q, k, k, causal: 1) end
      assert_raise ArgumentError, ~r/:scale must be a number/, fn -> sdpa.(q, k, k, scale: :x) end
      assert_raise ArgumentError, ~r/unknown keys \[:window\]/, fn -> sdpa.(q, k, k, window: 3) end
    end
  end
end

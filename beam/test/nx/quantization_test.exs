if Code.ensure_loaded?(Nx) do
  defmodule Emily.QuantizationTest do
    # Emily.Quantization on Emily.Backend (eager, and compiled by
    # Emily.Compiler) against its composed fallback evaluated on
    # Nx.BinaryBackend in a process of its own: codes, scales, biases and
    # dequantized weights bit for bit, the fused matmul within the bound
    # of a reordered sum; quantize_params on an Axon-shaped parameter map.
    use Emily.Test.NxCase, async: false

    alias Emily.Quantization, as: Q

    @block? function_exported?(Nx, :block, 4)

    # Values in [lo, lo + width) of `type`, from a seeded generator.
    defp rand(type, shape, seed, lo \\ -1.0, width \\ 2.0),
      do: Emily.Test.SeededTensor.uniform(type, shape, {seed, 3, 5}, lo, width)

    defp on_emily(t), do: Nx.backend_copy(t, Emily.Backend)

    # fun on copies of the inputs, in a process whose default backend is
    # Nx.BinaryBackend; the result's tensors come back on Nx.BinaryBackend.
    defp reference(inputs, fun) do
      wire = Enum.map(inputs, &Nx.backend_copy(&1, Nx.BinaryBackend))

      Task.async(fn ->
        Nx.default_backend(Nx.BinaryBackend)
        apply(fun, wire)
      end)
      |> Task.await(120_000)
    end

    defp binary(t), do: Nx.to_binary(t)

    defp same_weight!(%Q.Weight{} = got, %Q.Weight{} = want) do
      assert got.shape == want.shape
      assert {got.bits, got.group_size} == {want.bits, want.group_size}

      for field <- [:packed, :scales, :biases] do
        g = Map.fetch!(got, field)
        w = Map.fetch!(want, field)
        assert {g.type, g.shape} == {w.type, w.shape}, "#{field}"
        assert binary(g) == binary(w), "#{field} differs"
      end
    end

    # |got - want| <= rel * (sum |x| |w| of the row) + one rounding of the type
    defp close!(got, want, mag, rel) do
      assert got.type == want.type
      assert got.shape == want.shape
      gs = Nx.to_flat_list(Nx.as_type(got, :f64))
      ws = Nx.to_flat_list(Nx.as_type(want, :f64))
      ms = Nx.to_flat_list(mag)

      for {{a, b}, m} <- Enum.zip(Enum.zip(gs, ws), ms) do
        assert abs(a - b) <= rel * m + ulp(got.type) * abs(b),
               "#{a} != #{b} (bound #{rel * m})"
      end
    end

    defp ulp({:f, 64}), do: :math.pow(2, -52)
    defp ulp({:f, 32}), do: :math.pow(2, -23)
    defp ulp({:f, 16}), do: :math.pow(2, -10)
    defp ulp({:bf, 16}), do: :math.pow(2, -7)

    describe "quantize and dequantize" do
      for type <- [:f32, :bf16, :f16, :f64], bits <- [2, 4, 8], gs <- [32, 128] do
        test "#{type} bits #{bits} group #{gs}: the fallback's bits" do
          type = unquote(type)
          {bits, gs} = {unquote(bits), unquote(gs)}
          w = rand(type, {5, 256}, bits * 1000 + gs)
          got = Q.quantize(on_emily(w), bits: bits, group_size: gs)
          assert %Emily.Backend{} = got.packed.data
          want = reference([w], &Q.quantize(&1, bits: bits, group_size: gs))
          same_weight!(got, want)

          back = Q.dequantize(got)
          assert back.type == Nx.type(w) and back.shape == {5, 256}
          assert binary(back) == binary(reference([want], &Q.dequantize/1))
          # within half a step (plus the roundings of scale and bias)
          step = got.scales |> Nx.reduce_max() |> Nx.to_number()
          err = Nx.subtract(Nx.as_type(back, :f64), on_emily(Nx.as_type(w, :f64)))
          assert Nx.to_number(Nx.reduce_max(Nx.abs(err))) <= 0.5 * step + 0.02
        end
      end

      test "a constant group dequantizes exactly" do
        w = Nx.concatenate([Nx.broadcast(1.5, {2, 32}), rand(:f32, {2, 32}, 1)], axis: 1)
        qw = Q.quantize(on_emily(w), bits: 4, group_size: 32)
        assert Nx.to_flat_list(qw.scales[[.., 0]]) == [0.0, 0.0]
        assert Nx.to_flat_list(Q.dequantize(qw)[[.., 0..31]]) == List.duplicate(1.5, 64)
      end

      test "bad options and shapes" do
        w = on_emily(rand(:f32, {4, 64}, 2))

        assert_raise ArgumentError, ~r/:bits must be 2, 4 or 8/, fn ->
          Q.quantize(w, bits: 3)
        end

        assert_raise ArgumentError, ~r/:group_size must be 32, 64 or 128/, fn ->
          Q.quantize(w, group_size: 16)
        end

        assert_raise ArgumentError, ~r/multiple of the group size 128/, fn ->
          Q.quantize(w, group_size: 128)
        end

        assert_raise ArgumentError, ~r/must be a float tensor/, fn ->
          Q.quantize(Nx.as_type(w, :s32))
        end

        assert_raise ArgumentError, ~r/x's last axis must be 64/, fn ->
          Q.dot(on_emily(rand(:f32, {2, 32}, 3)), Q.quantize(w, group_size: 32))
        end
      end
    end

    describe "dot" do
      for {xt, wt} <- [f32: :f32, bf16: :bf16, f16: :f32, f32: :bf16, f64: :f32],
          {bits, gs} <- [{4, 64}, {8, 32}, {2, 128}] do
        test "x #{xt}, w #{wt}, bits #{bits} group #{gs}: eager and compiled vs the fallback" do
          {xt, wt} = {unquote(xt), unquote(wt)}
          {bits, gs} = {unquote(bits), unquote(gs)}
          w = rand(wt, {37, 256}, 7)
          qw = Q.quantize(on_emily(w), bits: bits, group_size: gs)

          for shape <- [{1, 256}, {3, 2, 256}, {40, 256}] do
            x = rand(xt, shape, 11)
            got = Q.dot(on_emily(x), qw)
            want = reference([x, qw], &Q.dot/2)
            acc = if :f64 in [xt, wt], do: :f64, else: :f32
            eps = if acc == :f64, do: :math.pow(2, -53), else: :math.pow(2, -24)

            mag =
              reference([x, qw], fn x, qw ->
                w = qw |> Q.dequantize() |> Nx.as_type(acc) |> Nx.abs()
                x |> Nx.as_type(acc) |> Nx.abs() |> Nx.dot([-1], w, [1])
              end)

            close!(got, want, mag, 2 * 256 * eps)

            compiled = Nx.Defn.jit(&Q.dot/2, compiler: Emily.Compiler).(on_emily(x), qw)
            assert binary(compiled) == binary(got)
          end
        end
      end

      test "the fused kernel runs as one engine call in a graph" do
        w = on_emily(rand(:f32, {64, 128}, 5))
        qw = Q.quantize(w)
        x = on_emily(rand(:f32, {2, 128}, 6))
        Nx.Defn.jit(&Q.dense(&1, &2, &3), compiler: Emily.Compiler).(x, qw, on_emily(Nx.iota({64})))

        # the matmul and the bias' add (not the fallback's dozen ops)
        if @block?,
          do: assert({:graph, %{calls: calls}} = Emily.Compiler.last_run()) && assert(calls <= 3)
      end
    end

    describe "quantize_params" do
      test "replaces the dense kernels ({in, out}, quantized transposed) and nothing else" do
        params = %{
          "dense_0" => %{
            "kernel" => on_emily(rand(:f32, {128, 48}, 1)),
            "bias" => on_emily(rand(:f32, {48}, 2))
          },
          "norm" => %{"gamma" => on_emily(rand(:f32, {48}, 3))},
          "odd" => %{"kernel" => on_emily(rand(:f32, {40, 8}, 4))}
        }

        q = Q.quantize_params(params, bits: 8, group_size: 64)
        assert %Q.Weight{shape: {48, 128}, bits: 8} = q["dense_0"]["kernel"]
        assert q["norm"] == params["norm"]
        assert q["odd"] == params["odd"]
        assert q["dense_0"]["bias"] == params["dense_0"]["bias"]

        x = on_emily(rand(:f32, {3, 128}, 9))
        %{"kernel" => k, "bias" => b} = params["dense_0"]
        dense = Nx.add(Nx.dot(x, k), b)
        quantized = Q.dense(x, q["dense_0"]["kernel"], b)
        # 8 bits: a step of range / 255 a group
        assert Nx.to_number(Nx.reduce_max(Nx.abs(Nx.subtract(dense, quantized)))) < 0.1
      end
    end
  end
end

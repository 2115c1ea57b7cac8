if Code.ensure_loaded?(Nx) do
  defmodule Emily.QuantizedTensorTest.Defns do
    import Nx.Defn

    # a cond whose branches use the quantized matrix differently
    defn cond_dot(x, w, p) do
      if p > 0 do
        Nx.dot(x, w)
      else
        Nx.dot(x, w * 2)
      end
    end
  end

  defmodule Emily.QuantizedTensorTest do
    # Emily.Quantization.quantize_tensor/2: a quantized matrix that is an
    # Nx.Tensor. Nx.dot with it (eager on Emily.Backend, and compiled by
    # Emily.Compiler) is the engine's quantized_matmul, bit for bit
    # Emily.Quantization.dot/2's result; every other operation reads the
    # dequantized matrix; quantize_model/2 on a nested parameter map.
    use ExUnit.Case, async: false
    @moduletag :nx

    alias Emily.Quantization, as: Q

    setup do
      Nx.default_backend(Emily.Backend)
      Emily.Compiler.clear_cache()
      :ok
    end

    # Values in [-1, 1) of `type`, from a seeded generator.
    defp rand(type, shape, seed) do
      Emily.Test.SeededTensor.uniform(type, shape, {seed, 7, 11}, -1.0, 2.0)
      |> Nx.backend_copy(Emily.Backend)
    end

    defp bits!(got, want) do
      assert {got.type, got.shape} == {want.type, want.shape}
      assert Nx.to_binary(got) == Nx.to_binary(want)
    end

    defp jit(fun), do: Nx.Defn.jit(fun, compiler: Emily.Compiler)

    @block? function_exported?(Nx, :block, 4)

    # |got - x . w| <= K * 2^-24 * sum_k |x w| + one rounding to got's
    # type: the bound of a reordered f32 sum (include/emily/ops_quant.h)
    defp within_sum_bound!(got, x, w) do
      k = elem(w.shape, 0)
      want = Nx.dot(Nx.as_type(x, :f64), Nx.as_type(w, :f64))
      mag = Nx.dot(Nx.abs(Nx.as_type(x, :f64)), Nx.abs(Nx.as_type(w, :f64)))
      err = Nx.abs(Nx.subtract(Nx.as_type(got, :f64), want))

      bound =
        Nx.add(Nx.multiply(mag, k * :math.pow(2, -24)), Nx.multiply(Nx.abs(want), ulp(got.type)))

      assert Nx.to_number(Nx.all(Nx.less_equal(err, bound))) == 1
    end

    defp ulp({:f, 32}), do: :math.pow(2, -23)
    defp ulp({:f, 16}), do: :math.pow(2, -10)
    defp ulp({:bf, 16}), do: :math.pow(2, -7)

    # The engine's quantized_matmul of x by the weight qw {n, k} (x . qw^T):
    # dot/2 where it is the engine's kernel (an Nx with Nx.block). On Nx
    # 0.7, dot/2 is its composed fallback (another order of the sum); there
    # Nx.dot of the quantized tensor is checked within the bound of the
    # reordered sum, and the other forms of the product are compared with it.
    defp engine_dot(x, %Q.Weight{shape: {n, k}} = qw) do
      if @block? do
        Q.dot(x, qw)
      else
        kernel = %Nx.Tensor{
          type: qw.scales.type,
          shape: {k, n},
          names: [nil, nil],
          data: %Emily.Backend{ref: {:quantized, qw, true}}
        }

        got = Nx.dot(x, kernel)
        # the weights as the kernel decodes them: in f32, not rounded to
        # the scales' type
        wide = %{qw | scales: Nx.as_type(qw.scales, :f32), biases: Nx.as_type(qw.biases, :f32)}
        within_sum_bound!(got, x, Nx.transpose(Q.dequantize(wide)))
        got
      end
    end

    describe "quantize_tensor/2" do
      test "keeps the shape, type and names; holds quantize/2 of the matrix or its transpose" do
        w = rand(:f32, {128, 96}, 1) |> Nx.rename([:in, :out])

        k0 = Q.quantize_tensor(w, bits: 4, group_size: 64)
        assert {k0.shape, k0.type, k0.names} == {{128, 96}, {:f, 32}, [:in, :out]}
        assert Q.quantized?(k0)
        refute Q.quantized?(w)
        {weight, true} = Q.weight(k0)
        want = Q.quantize(Nx.transpose(w), bits: 4, group_size: 64)
        assert weight.shape == {96, 128}

        for f <- [:packed, :scales, :biases],
            do: bits!(Map.fetch!(weight, f), Map.fetch!(want, f))

        w1 = rand(:bf16, {32, 128}, 2)
        k1 = Q.quantize_tensor(w1, bits: 8, group_size: 128, axis: 1)
        {weight, false} = Q.weight(k1)
        want = Q.quantize(w1, bits: 8, group_size: 128)
        for f <- [:packed, :scales, :biases], do: bits!(Map.fetch!(weight, f), Map.fetch!(want, f))
        assert Q.weight(Q.quantize_tensor(w1, axis: -1)) |> elem(1) == false
      end

      test "reads as its dequantized matrix: to_binary, copies to other backends, inspect" do
        w = rand(:f32, {64, 8}, 3)
        q = Q.quantize_tensor(w, bits: 2, group_size: 32)
        {weight, true} = Q.weight(q)
        deq = Nx.transpose(Q.dequantize(weight))
        bits!(Q.dequantize_tensor(q), deq)
        assert Nx.to_binary(q) == Nx.to_binary(deq)
        assert Nx.to_flat_list(q) == Nx.to_flat_list(deq)
        assert Q.dequantize_tensor(w) == w

        copy = Nx.backend_copy(q, Nx.BinaryBackend)
        assert %Nx.BinaryBackend{} = copy.data
        assert Nx.to_binary(copy) == Nx.to_binary(deq)

        text = inspect(q)
        assert text =~ "quantized: 2 bits, groups of 32 along axis 0"
        assert text =~ "f32[64][8]"

        # an Emily copy stays quantized; a transfer elsewhere dequantizes
        # and frees the parts
        assert Q.quantized?(Nx.backend_copy(q, Emily.Backend))
        moved = Nx.backend_transfer(q, Nx.BinaryBackend)
        assert Nx.to_binary(moved) == Nx.to_binary(deq)
        assert_raise ArgumentError, ~r/deallocated/, fn -> Nx.to_binary(weight.packed) end
      end

      test "copies a tensor of another backend to Emily first" do
        w = rand(:f32, {64, 4}, 4) |> Nx.backend_copy(Nx.BinaryBackend)
        q = Q.quantize_tensor(w)
        assert Emily.Backend.device(q) == :cpu
        {weight, true} = Q.weight(q)
        assert %Emily.Backend{} = weight.packed.data
      end

      test "bad options, shapes and types raise" do
        w = rand(:f32, {64, 64}, 5)

        assert_raise ArgumentError, ~r/:bits must be 2, 4 or 8, got: 3/, fn ->
          Q.quantize_tensor(w, bits: 3)
        end

        assert_raise ArgumentError, ~r/:group_size must be 32, 64 or 128, got: 16/, fn ->
          Q.quantize_tensor(w, group_size: 16)
        end

        assert_raise ArgumentError, ~r/:axis must be 0 or 1, got: 2/, fn ->
          Q.quantize_tensor(w, axis: 2)
        end

        assert_raise ArgumentError, ~r/unknown keys \[:bogus\]/, fn ->
          Q.quantize_tensor(w, bogus: 1)
        end

        assert_raise ArgumentError, ~r/must be a matrix, got shape \{64\}/, fn ->
          Q.quantize_tensor(rand(:f32, {64}, 6))
        end

        assert_raise ArgumentError,
                     ~r/axis 0 \(the grouped axis\) must be a multiple of the group size 64, got shape \{96, 64\}/,
                     fn -> Q.quantize_tensor(rand(:f32, {96, 64}, 7)) end

        assert_raise ArgumentError, ~r/must be a float tensor .* got s32/, fn ->
          Q.quantize_tensor(Nx.iota({64, 64}, type: :s32))
        end

        q = Q.quantize_tensor(w)

        assert_raise ArgumentError, ~r/quantized already/, fn -> Q.quantize_tensor(q) end

        assert_raise ArgumentError, ~r/not callable inside defn/, fn ->
          Nx.Defn.jit(fn t -> Q.quantize_tensor(t) end).(w)
        end

        assert_raise ArgumentError, ~r/not a quantized tensor/, fn -> Q.weight(w) end

        if function_exported?(Nx, :to_pointer, 2) do
          assert_raise ArgumentError, ~r/quantized tensor has no buffer/, fn ->
            Nx.to_pointer(q, mode: :local)
          end
        end
      end
    end

    describe "Nx.dot on Emily.Backend" do
      for type <- [:f32, :bf16, :f16], bits <- [2, 4, 8], gs <- [32, 128] do
        test "x . kernel {in, out} (axis 0) is dot/2's bits: #{type}, #{bits} bits, groups of #{gs}" do
          {type, bits, gs} = {unquote(type), unquote(bits), unquote(gs)}
          w = rand(type, {256, 24}, bits + gs)
          kernel = Q.quantize_tensor(w, bits: bits, group_size: gs)
          qw = Q.quantize(Nx.transpose(w), bits: bits, group_size: gs)

          for shape <- [{256}, {5, 256}, {2, 3, 256}] do
            x = rand(type, shape, 9)
            bits!(Nx.dot(x, kernel), engine_dot(x, qw))
          end
        end
      end

      test "x . w^T for a weight {out, in} (axis 1) is dot/2's bits" do
        w = rand(:f32, {40, 128}, 10)
        q = Q.quantize_tensor(w, bits: 4, group_size: 32, axis: 1)
        x = rand(:f32, {7, 128}, 11)
        bits!(Nx.dot(x, [1], q, [1]), engine_dot(x, Q.quantize(w, bits: 4, group_size: 32)))
      end

      test "the quantized operand on the left, and x contracted on another axis" do
        w = rand(:f32, {128, 24}, 12)
        kernel = Q.quantize_tensor(w, bits: 4, group_size: 64)
        qw = Q.quantize(Nx.transpose(w), bits: 4, group_size: 64)
        x = rand(:f32, {6, 128}, 13)
        want = engine_dot(x, qw)

        # kernel^T . x^T = (x . kernel)^T
        bits!(Nx.dot(kernel, [0], x, [1]), Nx.transpose(want))
        # x given as {in, rows}
        bits!(Nx.dot(Nx.transpose(x), [0], kernel, [0]), want)

        x3 = rand(:f32, {2, 128, 3}, 14)
        x3_last = Nx.transpose(x3, axes: [0, 2, 1])
        bits!(Nx.dot(x3, [1], kernel, [0]), engine_dot(x3_last, qw))
        bits!(Nx.dot(kernel, [0], x3, [1]), Nx.transpose(engine_dot(x3_last, qw), axes: [2, 0, 1]))
      end

      test "a dot over the other axis (transpose: false) is within the sum bound of the dequantized dot" do
        # quantized along `out`: x . kernel contracts `in`, not the groups
        w = rand(:f32, {48, 128}, 15)
        q = Q.quantize_tensor(w, bits: 4, group_size: 64, axis: 1)
        x = rand(:f32, {5, 48}, 16)
        got = Nx.dot(x, q)
        assert {got.type, got.shape} == {{:f, 32}, {5, 128}}
        within_sum_bound!(got, x, Q.dequantize_tensor(q))
      end

      test "other dots dequantize: batch axes, integer x, two quantized operands" do
        w = rand(:f32, {64, 64}, 17)
        q = Q.quantize_tensor(w, bits: 8, group_size: 64)
        deq = Q.dequantize_tensor(q)

        x = Nx.iota({3, 64}, type: :s32)
        bits!(Nx.dot(x, q), Nx.dot(x, deq))
        bits!(Nx.dot(q, q), Nx.dot(deq, deq))
        bits!(Nx.dot(q, [0, 1], deq, [0, 1]), Nx.dot(deq, [0, 1], deq, [0, 1]))

        xb = rand(:f32, {64, 64}, 18)
        bits!(Nx.dot(q, [1], [0], xb, [1], [0]), Nx.dot(deq, [1], [0], xb, [1], [0]))
      end

      test "other operations read the dequantized matrix" do
        w = rand(:bf16, {64, 32}, 19)
        q = Q.quantize_tensor(w, bits: 4, group_size: 32)
        deq = Q.dequantize_tensor(q)

        bits!(Nx.add(q, 1), Nx.add(deq, 1))
        bits!(Nx.add(1, q), Nx.add(1, deq))
        bits!(Nx.multiply(q, q), Nx.multiply(deq, deq))
        bits!(Nx.sum(q, axes: [0]), Nx.sum(deq, axes: [0]))
        bits!(Nx.transpose(q), Nx.transpose(deq))
        bits!(Nx.take(q, Nx.tensor([3, 0, 63])), Nx.take(deq, Nx.tensor([3, 0, 63])))
        bits!(Nx.concatenate([q, deq]), Nx.concatenate([deq, deq]))
        bits!(Nx.as_type(q, :f32), Nx.as_type(deq, :f32))
        bits!(Nx.slice(q, [2, 4], [3, 5]), Nx.slice(deq, [2, 4], [3, 5]))
        bits!(Nx.reduce(q, 0, &Nx.add/2), Nx.reduce(deq, 0, &Nx.add/2))
      end
    end

    describe "under Emily.Compiler" do
      test "a dot of a quantized argument is one quantized_matmul in the graph, dot/2's bits" do
        w = rand(:f32, {128, 24}, 20)
        x = rand(:f32, {4, 128}, 21)
        kernel = Q.quantize_tensor(w, bits: 4, group_size: 64)
        want = engine_dot(x, Q.quantize(Nx.transpose(w), bits: 4, group_size: 64))

        bits!(jit(&Nx.dot/2).(x, kernel), want)
        # x and the three parts are the parameters; the dot is the one call
        assert {:graph, %{params: 4, calls: 1}} = Emily.Compiler.last_run()

        bits!(jit(fn k, x -> Nx.dot(k, [0], x, [1]) end).(kernel, x), Nx.transpose(want))

        w1 = rand(:f32, {24, 128}, 22)
        q1 = Q.quantize_tensor(w1, bits: 2, group_size: 128, axis: 1)
        want1 = engine_dot(x, Q.quantize(w1, bits: 2, group_size: 128))
        bits!(jit(fn x, w -> Nx.dot(x, [1], w, [1]) end).(x, q1), want1)
        assert {:graph, %{params: 4, calls: 1}} = Emily.Compiler.last_run()

        # the other axis, eager and compiled alike
        x2 = rand(:f32, {3, 24}, 23)
        bits!(jit(&Nx.dot/2).(x2, q1), Nx.dot(x2, q1))
      end

      test "other uses dequantize in the graph, as eagerly" do
        w = rand(:f32, {64, 32}, 24)
        x = rand(:f32, {2, 64}, 25)
        q = Q.quantize_tensor(w, bits: 4, group_size: 32)

        fun = fn x, w -> Nx.add(Nx.dot(x, w), Nx.sum(w, axes: [0])) end
        bits!(jit(fun).(x, q), fun.(x, q))
        assert {:graph, %{params: 4}} = Emily.Compiler.last_run()

        # returned as it is: its matrix
        bits!(jit(fn w -> w end).(q), Q.dequantize_tensor(q))

        # in a cond's branch (the parts become the branch's parameters)
        cond_fun = jit(&Emily.QuantizedTensorTest.Defns.cond_dot/3)
        bits!(cond_fun.(x, q, 1), Nx.dot(x, q))
        bits!(cond_fun.(x, q, 0), Nx.dot(x, Nx.multiply(Q.dequantize_tensor(q), 2)))
      end

      test "a hand-written model on quantize_model's parameters: compiled = eager" do
        params = %{
          "hidden" => %{"kernel" => rand(:f32, {128, 64}, 26), "bias" => rand(:f32, {64}, 27)},
          "out" => %{"kernel" => rand(:f32, {64, 10}, 28), "bias" => rand(:f32, {10}, 29)}
        }

        model = fn x, p ->
          x
          |> Nx.dot(p["hidden"]["kernel"])
          |> Nx.add(p["hidden"]["bias"])
          |> Nx.sigmoid()
          |> Nx.dot(p["out"]["kernel"])
        end

        qp = Q.quantize_model(params, bits: 8, group_size: 32)
        assert Q.quantized?(qp["hidden"]["kernel"]) and Q.quantized?(qp["out"]["kernel"])
        x = rand(:f32, {3, 128}, 30)

        eager = model.(x, qp)
        bits!(jit(model).(x, qp), eager)
        # 2 quantized kernels (3 parameters each), 2 biases, x
        assert {:graph, %{params: 9}} = Emily.Compiler.last_run()

        # 8-bit weights: close to the f32 model
        plain = model.(x, params)
        assert Nx.to_number(Nx.reduce_max(Nx.abs(Nx.subtract(eager, plain)))) < 0.05
      end

      test "the cache tells quantized arguments from plain ones and layouts apart" do
        w = rand(:f32, {128, 16}, 31)
        x = rand(:f32, {2, 128}, 32)
        f = jit(&Nx.dot/2)
        q4 = Q.quantize_tensor(w, bits: 4, group_size: 64)
        q8 = Q.quantize_tensor(w, bits: 8, group_size: 64)

        bits!(f.(x, w), Nx.dot(x, w))
        assert {:graph, %{params: 2}} = Emily.Compiler.last_run()
        bits!(f.(x, q4), Nx.dot(x, q4))
        assert {:graph, %{params: 4}} = Emily.Compiler.last_run()
        bits!(f.(x, q8), Nx.dot(x, q8))
        bits!(f.(x, w), Nx.dot(x, w))
        assert {:graph, %{params: 2}} = Emily.Compiler.last_run()
        refute Nx.to_binary(Nx.dot(x, q4)) == Nx.to_binary(Nx.dot(x, q8))

        # compiled from templates: a graph for quantized arguments at the
        # first run with them
        compiled = Nx.Defn.compile(&Nx.dot/2, [x, w], compiler: Emily.Compiler)
        bits!(compiled.(x, w), Nx.dot(x, w))
        assert {:graph, %{params: 2}} = Emily.Compiler.last_run()
        bits!(compiled.(x, q4), Nx.dot(x, q4))
        assert {:graph, %{params: 4, calls: 1}} = Emily.Compiler.last_run()
        bits!(compiled.(x, w), Nx.dot(x, w))
        assert {:graph, %{params: 2}} = Emily.Compiler.last_run()
      end
    end

    describe "quantize_model/2" do
      test "quantizes the dense kernels of a nested map and keeps the rest" do
        params = %{
          "embedder.token_embedding" => %{"kernel" => rand(:f32, {64, 32}, 40)},
          "encoder" => %{
            "blocks.0.ffn" => %{
              "kernel" => rand(:f32, {32, 128}, 41),
              "bias" => rand(:f32, {128}, 42)
            },
            "blocks.0.out" => %{"kernel" => rand(:f32, {128, 32}, 43)},
            "odd" => %{"kernel" => rand(:f32, {48, 32}, 44)},
            "norm" => %{"gamma" => rand(:f32, {32}, 45)},
            "ints" => %{"kernel" => Nx.iota({32, 4}, type: :s32)}
          }
        }

        q = Q.quantize_model(params, bits: 4, group_size: 32)
        enc = q["encoder"]
        assert Q.quantized?(enc["blocks.0.ffn"]["kernel"])
        assert Q.quantized?(enc["blocks.0.out"]["kernel"])
        # an embedding, an `in` not a multiple of 32, an integer kernel, others
        refute Q.quantized?(q["embedder.token_embedding"]["kernel"])
        refute Q.quantized?(enc["odd"]["kernel"])
        assert enc["ints"] == params["encoder"]["ints"]
        assert enc["norm"] == params["encoder"]["norm"]
        assert enc["blocks.0.ffn"]["bias"] == params["encoder"]["blocks.0.ffn"]["bias"]

        {weight, true} = Q.weight(enc["blocks.0.ffn"]["kernel"])
        assert {weight.bits, weight.group_size, weight.shape} == {4, 32, {128, 32}}

        # a filter of the layer's path and kernel replaces the default
        seen = :ets.new(:seen, [:bag, :public])

        q =
          Q.quantize_model(params,
            group_size: 32,
            filter: fn layer, kernel ->
              :ets.insert(seen, {layer, kernel.shape})
              layer == "encoder.blocks.0.out"
            end
          )

        assert Q.quantized?(q["encoder"]["blocks.0.out"]["kernel"])
        refute Q.quantized?(q["encoder"]["blocks.0.ffn"]["kernel"])
        assert {"embedder.token_embedding", {64, 32}} in :ets.tab2list(seen)
        # 64 = 2 groups: the embedding is offered to the filter; 48 is not
        refute Enum.any?(:ets.tab2list(seen), fn {layer, _} -> layer == "encoder.odd" end)
      end

      test "an Axon.ModelState's data, and bad arguments" do
        data = %{"dense" => %{"kernel" => rand(:f32, {64, 8}, 46)}}
        state = Map.put(%{data: data, parameters: %{}}, :__struct__, Axon.ModelState)
        q = Q.quantize_model(state)
        assert Q.quantized?(q.data["dense"]["kernel"])
        assert q.parameters == %{}

        assert_raise ArgumentError, ~r/:filter must be a function of 2 arguments/, fn ->
          Q.quantize_model(data, filter: fn _ -> true end)
        end

        assert_raise ArgumentError, ~r/expected a map of parameters/, fn ->
          Q.quantize_model([1, 2])
        end

        assert_raise ArgumentError, ~r/:bits must be 2, 4 or 8/, fn ->
          Q.quantize_model(data, bits: 5)
        end
      end
    end
  end
end

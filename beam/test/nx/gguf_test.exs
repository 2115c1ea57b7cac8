if Code.ensure_loaded?(Nx) do
  defmodule Emily.GGUFTest do
    # Emily.Quantization.load_gguf/2 on a GGUF file written here (metadata
    # of several types, an F32, a Q8_0 and a Q4_1 tensor with known codes)
    # and, when EMILY_SMOLLM2_GGUF points at it, SmolLM2's Q4_1 file.
    use ExUnit.Case, async: true
    @moduletag :nx

    alias Emily.Quantization
    alias Emily.Quantization.Weight

    defp str(s), do: <<byte_size(s)::little-64, s::binary>>
    defp kv(key, type, value), do: [str(key), <<type::little-32>>, value]

    defp tensor_info(name, ne, type, offset) do
      [
        str(name),
        <<length(ne)::little-32>>,
        Enum.map(ne, &<<&1::little-64>>),
        <<type::little-32>>,
        <<offset::little-64>>
      ]
    end

    defp pad(bin, align) do
      rem = rem(byte_size(bin), align)
      if rem == 0, do: bin, else: bin <> :binary.copy(<<0>>, align - rem)
    end

    # Q8_0 block: d = 0.5, q = -16..15; Q4_1 block: d = 1, m = -2, byte j
    # holds element j (low nibble) and element j + 16 = 15 - j (high).
    defp q8_block, do: <<0x3800::little-16>> <> for(q <- -16..15, into: <<>>, do: <<q::signed-8>>)

    defp q41_block do
      <<0x3C00::little-16, 0xC000::little-16>> <>
        for(j <- 0..15, into: <<>>, do: <<15 - j::4, j::4>>)
    end

    defp write_file(path) do
      meta = [
        kv("general.architecture", 8, str("llama")),
        kv("llama.block_count", 4, <<30::little-32>>),
        kv("f", 6, <<0.5::little-float-32>>),
        kv("flag", 7, <<1>>),
        kv("tokens", 9, [<<8::little-32, 2::little-64>>, str("a"), str("bc")]),
        kv("ids", 9, [<<5::little-32, 2::little-64>>, <<-1::little-signed-32, 7::little-32>>])
      ]

      f32 = for v <- [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], into: <<>>, do: <<v::little-float-32>>
      q8 = q8_block() <> q8_block()
      q41 = q41_block()
      datas = [f32, q8, q41]

      {infos, _} =
        Enum.map_reduce(
          Enum.zip([["x", "q8", "q41"], [[3, 2], [32, 2], [32, 1]], [0, 8, 3], datas]),
          0,
          fn {name, ne, type, data}, off ->
            {tensor_info(name, ne, type, off), off + byte_size(pad(data, 32))}
          end
        )

      header =
        IO.iodata_to_binary(["GGUF", <<3::little-32, 3::little-64, 6::little-64>>, meta, infos])

      body = Enum.map(Enum.with_index(datas), fn {d, i} -> if i < 2, do: pad(d, 32), else: d end)
      File.write!(path, [pad(header, 32) | body])
    end

    setup do
      dir = Path.join(System.tmp_dir!(), "emily_gguf_test_#{System.unique_integer([:positive])}")
      File.mkdir_p!(dir)
      on_exit(fn -> File.rm_rf!(dir) end)
      %{dir: dir}
    end

    test "metadata, dense tensors and weights usable by dot/2", %{dir: dir} do
      path = Path.join(dir, "t.gguf")
      write_file(path)
      %{metadata: meta, tensors: ts} = Quantization.load_gguf(path)

      assert meta["general.architecture"] == "llama"
      assert meta["llama.block_count"] == 30
      assert meta["f"] == 0.5
      assert meta["flag"] == true
      assert meta["tokens"] == ["a", "bc"]
      assert meta["ids"] == [-1, 7]

      assert Nx.to_flat_list(ts["x"]) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
      assert ts["x"].shape == {2, 3}

      %Weight{bits: 8, group_size: 32, shape: {2, 32}} = q8 = ts["q8"]
      want8 = for _ <- 1..2, q <- -16..15, do: q * 0.5
      assert Nx.to_flat_list(Quantization.dequantize(q8)) == want8

      %Weight{bits: 4, shape: {1, 32}} = q41 = ts["q41"]
      want41 = for(e <- 0..15, do: e - 2.0) ++ for(e <- 16..31, do: 31 - e - 2.0)
      assert Nx.to_flat_list(Quantization.dequantize(q41)) == want41

      x = Nx.iota({3, 32}, type: :f32) |> Nx.divide(64)
      want = Nx.dot(x, Nx.transpose(Nx.tensor([want41], type: :f32)))
      assert Nx.all_close(Quantization.dot(x, q41), want, rtol: 1.0e-6) |> Nx.to_number() == 1

      %{tensors: only} = Quantization.load_gguf(path, only: ["q8"], scale_type: {:f, 16})
      assert Map.keys(only) == ["q8"]
      assert only["q8"].scales.type == {:f, 16}
      assert Nx.to_flat_list(Quantization.dequantize(only["q8"])) == want8
    end

    test "as: :tensors gives quantized Nx tensors that Nx.dot multiplies fused", %{dir: dir} do
      path = Path.join(dir, "t.gguf")
      write_file(path)
      %{tensors: ws} = Quantization.load_gguf(path)
      %{tensors: ts} = Quantization.load_gguf(path, as: :tensors)

      assert Nx.to_flat_list(ts["x"]) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
      q41 = ts["q41"]
      assert Quantization.quantized?(q41)
      assert {q41.shape, q41.type} == {{1, 32}, {:f, 32}}
      assert {%Weight{bits: 4, group_size: 32}, false} = Quantization.weight(q41)

      # the values are the dequantized ones; the dot is the fused kernel's
      assert Nx.to_flat_list(q41) == Nx.to_flat_list(Quantization.dequantize(ws["q41"]))
      x = Nx.iota({3, 32}, type: :f32) |> Nx.divide(64)
      fused = Quantization.dot(x, ws["q8"])
      assert Nx.to_binary(Nx.dot(x, [1], ts["q8"], [1])) == Nx.to_binary(fused)
      jitted = Nx.Defn.jit(fn x, w -> Nx.dot(x, [1], w, [1]) end, compiler: Emily.Compiler)
      assert Nx.to_binary(jitted.(x, ts["q8"])) == Nx.to_binary(fused)

      assert_raise ArgumentError, ~r/:as must be :weights or :tensors/, fn ->
        Quantization.load_gguf(path, as: :dense)
      end
    end

    test "errors carry the reader's message", %{dir: dir} do
      path = Path.join(dir, "t.gguf")
      write_file(path)

      assert_raise ArgumentError, ~r/tensor nope is not in/, fn ->
        Quantization.load_gguf(path, only: ["nope"])
      end

      File.write!(Path.join(dir, "bad.gguf"), "GGUF" <> <<9::little-32>>)

      assert_raise ArgumentError, ~r/GGUF version 9 is not supported/, fn ->
        Quantization.load_gguf(Path.join(dir, "bad.gguf"))
      end

      assert_raise ArgumentError, ~r/scale_type must be f32, f16 or bf16/, fn ->
        Quantization.load_gguf(path, scale_type: {:f, 64})
      end
    end

    smollm2 = System.get_env("EMILY_SMOLLM2_GGUF")

    if smollm2 && File.exists?(smollm2) do
      test "SmolLM2's file" do
        path = System.get_env("EMILY_SMOLLM2_GGUF")

        %{metadata: meta, tensors: ts} =
          Quantization.load_gguf(path, only: ["blk.0.attn_q.weight", "output_norm.weight"])

        assert meta["llama.block_count"] == 30
        assert length(meta["tokenizer.ggml.tokens"]) == 49152
        %Weight{bits: 4, group_size: 32, shape: {576, 576}} = w = ts["blk.0.attn_q.weight"]
        assert ts["output_norm.weight"].shape == {576}
        x = Nx.iota({1, 576}, type: :f32) |> Nx.divide(576)
        want = Nx.dot(x, Nx.transpose(Quantization.dequantize(w)))

        assert Nx.all_close(Quantization.dot(x, w), want, rtol: 1.0e-4, atol: 1.0e-5)
               |> Nx.to_number() == 1
      end
    else
      @tag skip: "EMILY_SMOLLM2_GGUF not set to SmolLM2-135M-Instruct.Q4_1.gguf"
      test "SmolLM2's file"
    end
  end
end

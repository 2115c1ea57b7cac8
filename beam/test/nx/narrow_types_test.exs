# The six types Nx added after 0.7 (f8, f8_e4m3fn, s2, s4, u2, u4) on
# Emily.Backend against the loaded Nx's Nx.BinaryBackend, in the same VM.
# Nx 0.7 has none of them: there this module is not defined, and says so.
nx_version = Application.spec(:nx, :vsn) |> to_string()

if Code.ensure_loaded?(Nx) and Version.match?(nx_version, ">= 0.10.0") do
  defmodule Emily.NarrowTypesTest do
    use ExUnit.Case, async: true

    @types [{:f, 8}, {:f8_e4m3fn, 8}, {:s, 2}, {:s, 4}, {:u, 2}, {:u, 4}]

    defp binary(t), do: Nx.backend_copy(t, Nx.BinaryBackend)

    # type, shape and Nx's binary form (sub-byte types: a bitstring); the
    # message shows the bits, as Nx cannot inspect sub-byte tensors
    defp assert_same(e, b, what) do
      assert %Emily.Backend{} = e.data
      got = {e.type, e.shape, Nx.to_binary(e)}
      want = {b.type, b.shape, Nx.to_binary(b)}
      assert got == want, "#{what}: Emily #{inspect(got)}, Nx.BinaryBackend #{inspect(want)}"
    end

    # values with no zero: Nx.BinaryBackend on OTP < 27 loses the sign of
    # the 8-bit floats' zeros (tests/corpus/NARROW.md)
    defp values({:s, 2}), do: [-2, -1, 1]
    defp values({:u, 2}), do: [1, 2, 3]
    defp values({:s, _}), do: [-8, -3, 1, 5, 7]
    defp values({:u, _}), do: [1, 5, 9, 15]
    defp values(_float), do: [-3.5, -1.0, 0.25, 1.5, 7.5, 40.0]

    test "Nx's binary form: sub-byte elements packed as bitstrings" do
      t = Nx.tensor([1, -2, 3], type: :s4, backend: Emily.Backend)
      assert Nx.to_binary(t) == <<30, 3::4>>
      assert Nx.to_binary(Nx.tensor([1, 2, 3, 5], type: :u2, backend: Emily.Backend)) == "m"
      # (Nx.from_binary takes whole bytes: 4 elements here)
      back = Nx.from_binary(<<30, 0x3F>>, :s4, backend: Emily.Backend)
      assert Nx.to_flat_list(back) == [1, -2, 3, -1]
      assert Nx.to_binary(t, limit: 2) == <<30>>
      f8 = Nx.from_binary(<<0x3C, 0xC0>>, :f8, backend: Emily.Backend)
      assert Nx.to_flat_list(f8) == [1.0, -2.0]
    end

    test "element-wise ops, reductions and dot agree with Nx.BinaryBackend" do
      for type <- @types do
        e = Nx.tensor(values(type), type: type, backend: Emily.Backend)
        b = binary(e)
        n = Nx.size(e)

        for {name, f} <- [
              add: &Nx.add(&1, Nx.reverse(&1)),
              multiply: &Nx.multiply(&1, &1),
              subtract: &Nx.subtract(&1, 1),
              max: &Nx.max(&1, Nx.reverse(&1)),
              less: &Nx.less(&1, Nx.reverse(&1)),
              sum: &Nx.sum/1,
              reduce_max: &Nx.reduce_max/1,
              argmin: &Nx.argmin/1,
              sort: &Nx.sort(&1, direction: :desc),
              dot: &Nx.dot(Nx.reshape(&1, {n, 1}), Nx.reshape(&1, {1, n})),
              as_f32: &Nx.as_type(&1, :f32),
              transpose: &Nx.transpose(Nx.reshape(&1, {1, n}))
            ] do
          assert_same(f.(e), f.(b), "#{inspect(type)} #{name}")
        end

        if elem(type, 0) in [:f, :f8_e4m3fn] do
          assert_same(Nx.exp(e), Nx.exp(b), "#{inspect(type)} exp")
          assert_same(Nx.divide(e, 3), Nx.divide(b, 3), "#{inspect(type)} divide")
        else
          assert_same(
            Nx.population_count(e),
            Nx.population_count(b),
            "#{inspect(type)} population_count"
          )

          assert_same(Nx.bitwise_not(e), Nx.bitwise_not(b), "#{inspect(type)} bitwise_not")
        end
      end
    end

    test "conversions to and from every narrow type follow Nx's write rules" do
      src =
        Nx.tensor([-600.0, -3.7, -1.5, 0.49, 2.5, 7.9, 17.0, 100.0, 1.0e6, :nan, :infinity],
          backend: Emily.Backend
        )

      for type <- @types do
        assert_same(Nx.as_type(src, type), Nx.as_type(binary(src), type), "f32 -> #{inspect(type)}")
        narrow = Nx.tensor(values(type), type: type, backend: Emily.Backend)

        for to <- @types ++ [{:s, 64}, {:f, 16}, {:bf, 16}], to != type do
          assert_same(
            Nx.as_type(narrow, to),
            Nx.as_type(binary(narrow), to),
            "#{inspect(type)} -> #{inspect(to)}"
          )
        end
      end
    end

    test "Nx.Type's rules for them: f8_e4m3fn with f32 keeps the left operand's type" do
      a = Nx.tensor([7.0], type: :f8_e4m3fn, backend: Emily.Backend)
      b = Nx.tensor([1.0], type: :f32, backend: Emily.Backend)
      assert_same(Nx.add(a, b), Nx.add(binary(a), binary(b)), "e4m3 + f32")
      assert_same(Nx.add(b, a), Nx.add(binary(b), binary(a)), "f32 + e4m3")
      assert_same(Nx.add(a, 1.0), Nx.add(binary(a), 1.0), "e4m3 + 1.0")
      s = Nx.tensor([7, -8], type: :s4, backend: Emily.Backend)
      u = Nx.tensor([15, 1], type: :u4, backend: Emily.Backend)
      assert_same(Nx.add(s, 1), Nx.add(binary(s), 1), "s4 + 1 (wraps in s4)")
      assert_same(Nx.add(s, u), Nx.add(binary(s), binary(u)), "s4 + u4 (s8)")
    end

    test "tensors move between Nx.BinaryBackend and Emily" do
      b = Nx.tensor([1, -2, 3], type: :s4, backend: Nx.BinaryBackend)
      e = Nx.backend_transfer(b, Emily.Backend)
      assert %Emily.Backend{} = e.data
      assert Nx.to_binary(e) == Nx.to_binary(b)
      assert Nx.to_binary(Nx.backend_transfer(e, Nx.BinaryBackend)) == <<30, 3::4>>
    end

    test "Emily.Compiler takes them as arguments: f8 dots (emily_dot_fp8's route) as eagerly" do
      on = fn list, shape, type ->
        Nx.tensor(list, type: :f32, backend: Emily.Backend) |> Nx.reshape(shape) |> Nx.as_type(type)
      end

      a = on.(Enum.map(0..127, &((&1 - 60) / 16)), {4, 32}, :f8_e4m3fn)
      b = on.(Enum.map(0..255, &((&1 - 100) / -40)), {32, 8}, :f8_e4m3fn)
      b5 = Nx.as_type(b, :f8)
      x = on.(Enum.map(0..127, &(&1 / 10)), {4, 32}, :f32)
      dot = Nx.Defn.jit(&Nx.dot/2, compiler: Emily.Compiler)

      for {l, r, what} <- [{a, b, "e4m3 . e4m3"}, {a, b5, "e4m3 . e5m2"}, {x, b, "f32 . e4m3"}] do
        got = dot.(l, r)
        assert {:graph, _} = Emily.Compiler.last_run()
        want = Nx.dot(l, r)

        assert {got.type, got.shape, Nx.to_binary(got)} ==
                 {want.type, want.shape, Nx.to_binary(want)},
               what
      end

      s = Nx.tensor([7, -8, 3], type: :s4, backend: Emily.Backend)
      got = Nx.Defn.jit(&Nx.add(&1, 1), compiler: Emily.Compiler).(s)
      assert_same(got, Nx.add(binary(s), 1), "compiled s4 + 1")
    end

    test "sub-byte tensors are not shared through pointers" do
      t = Nx.tensor([1, 2], type: :u4, backend: Emily.Backend)
      assert_raise ArgumentError, ~r/sub-byte types/, fn -> Nx.to_pointer(t, mode: :local) end
    end
  end
else
  IO.puts(
    "narrow_types_test: not run: Nx #{nx_version} has no f8/s4 types (they came in Nx 0.9-0.11)"
  )
end

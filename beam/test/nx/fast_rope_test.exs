if Code.ensure_loaded?(Nx) do
  defmodule Emily.FastRopeTest do
    # Emily.Fast.rope on Emily.Backend (eager, and compiled by
    # Emily.Compiler) against its composed fallback evaluated on
    # Nx.BinaryBackend in a process of its own (test/support/fast_reference.ex:
    # an upstream rope used the reciprocal frequency table, unnoticed
    # because its reference ran on the backend under test); the fallback
    # against Bumblebee's rotary embedding expression written out here; and
    # gradients (the fallback's).
    use Emily.Test.NxCase, async: false

    alias Emily.Test.FastReference

    defp rand(type, shape, seed),
      do: Emily.Test.SeededTensor.uniform(type, shape, {seed, 3, 17}, -2.0, 4.0)

    defp positions(list, shape),
      do: list |> Nx.tensor(type: :s64, backend: Nx.BinaryBackend) |> Nx.reshape(shape)

    defp on_emily(nil), do: nil
    defp on_emily(t), do: Nx.backend_copy(t, Emily.Backend)

    defp reference(inputs, fun), do: inputs |> FastReference.run(fun) |> FastReference.from_wire()

    @block? function_exported?(Nx, :block, 4)

    defp jit(fun), do: Nx.Defn.jit(fun, compiler: Emily.Compiler)

    defp assert_lowered! do
      if @block?, do: assert({:graph, %{calls: 1}} = Emily.Compiler.last_run())
    end

    # Bit for bit where Nx.block runs the engine's kernel (the header's
    # expression, computed as the fallback computes it); on Nx 0.7 Emily
    # runs the fallback's ops, whose f64 cos may differ from the
    # reference's in its last bit (then an f32 angle's cos rarely rounds
    # the other way): within an ULP of the output type there.
    defp same!(got, want, label) do
      assert got.type == want.type and got.shape == want.shape, label

      if @block? do
        assert Nx.to_binary(got) == Nx.to_binary(want), label
      else
        eps = %{{:f, 64} => 1.0e-15, {:f, 32} => 3.0e-7, {:f, 16} => 2.0e-3, {:bf, 16} => 1.6e-2}

        Enum.zip(Nx.to_flat_list(got), Nx.to_flat_list(Nx.backend_copy(want, Nx.BinaryBackend)))
        |> Enum.each(fn {a, b} ->
          assert abs(a - b) <= 4 * eps[got.type] * max(abs(b), 1.0), label
        end)
      end
    end

    @llama3 %{
      type: :llama3,
      factor: 8.0,
      low_frequency_factor: 1.0,
      high_frequency_factor: 4.0,
      original_max_positions: 64
    }

    # {label, x shape {B, S, H, D}, positions (list, shape), options}
    defp cases do
      [
        {"plain", {2, 6, 3, 16}, {Enum.to_list(0..5), {6}}, []},
        {"traditional", {2, 6, 3, 16}, {Enum.to_list(0..5), {6}}, [traditional: true]},
        {"partial dims", {1, 5, 2, 12}, {Enum.to_list(3..7), {5}}, [dims: 8]},
        {"decode offsets per entry", {2, 1, 4, 16}, {[17, 250], {2, 1}}, [base: 100_000]},
        {"prefill at an offset", {2, 9, 2, 32}, {Enum.to_list(1000..1017), {2, 9}},
         [base: 500_000, traditional: true]},
        {"linear", {1, 7, 2, 16}, {Enum.to_list(0..6), {7}},
         [scaling: %{type: :linear, factor: 3.0}]},
        {"dynamic", {1, 12, 2, 16}, {Enum.to_list(0..11), {12}},
         [scaling: %{type: :dynamic, factor: 2.0, original_max_positions: 8}]},
        {"dynamic, decoding", {1, 1, 2, 16}, {[40], {1}},
         [scaling: %{type: :dynamic, factor: 2.0, original_max_positions: 8}, sequence_length: 41]},
        {"llama3", {1, 8, 2, 32}, {Enum.to_list(100..107), {8}}, [base: 500_000, scaling: @llama3]},
        {"explicit table", {1, 4, 2, 8}, {Enum.to_list(5..8), {4}},
         [inv_frequency: Nx.tensor([1.0, 0.3, 0.01, 2.5], backend: Nx.BinaryBackend)]}
      ]
    end

    test "eager and compiled Emily against the fallback on Nx.BinaryBackend" do
      for type <- [{:f, 32}, {:f, 16}, {:bf, 16}, {:f, 64}],
          {{label, shape, {plist, pshape}, opts}, k} <- Enum.with_index(cases()) do
        label = "#{label} #{Nx.Type.to_string(type)}"
        x = rand(type, shape, 10 + k)
        pos = positions(plist, pshape)
        table = opts[:inv_frequency]
        rest = Keyword.delete(opts, :inv_frequency)
        call = fn x, p, t -> Emily.Fast.rope(x, p, rest ++ [inv_frequency: t]) end
        want = reference([x, pos, table], call)
        [xe, pe, te] = Enum.map([x, pos, table], &on_emily/1)

        eager = call.(xe, pe, te)
        assert %Emily.Backend{} = eager.data, label
        same!(eager, want, label)

        compiled =
          if table,
            do: jit(call).(xe, pe, te),
            else: jit(&call.(&1, &2, nil)).(xe, pe)

        assert_lowered!()
        assert Nx.to_binary(compiled) == Nx.to_binary(eager), label
      end
    end

    # Hugging Face's convention: the angle of pair i is position * inv[i]
    # (not position / inv, MLX's `freqs`): e_0 and e_1 of a {1, 1, 1, 4} x
    # at position 3 with the table [0.5, 0.25].
    test "the explicit table multiplies the positions" do
      x = Nx.tensor([[[[1.0, 0.0, 0.0, 0.0]]]], backend: Nx.BinaryBackend)
      pos = positions([3], {1})
      inv = Nx.tensor([0.5, 0.25], backend: Nx.BinaryBackend)

      f32 = fn v ->
        <<r::float-32>> = <<v::float-32>>
        r
      end

      for y <- [
            reference([x, pos, inv], &Emily.Fast.rope(&1, &2, inv_frequency: &3)),
            Emily.Fast.rope(on_emily(x), on_emily(pos), inv_frequency: on_emily(inv))
          ] do
        assert Nx.to_flat_list(y) == [f32.(:math.cos(1.5)), 0.0, f32.(:math.sin(1.5)), 0.0]
      end
    end

    ## Bumblebee's rotary embedding (Bumblebee.Layers.apply_rotary_embedding
    ## and create_sinusoidal_positions), written out on Nx.BinaryBackend

    defp bumblebee_rope(x, position_ids, size, base, scaling) do
      seq = Nx.axis_size(position_ids, 1)
      position = Nx.iota({seq})
      range = Nx.iota({div(size, 2)}) |> Nx.multiply(2) |> Nx.divide(size)
      inv = Nx.divide(1.0, Nx.pow(base, range))

      {position, inv} =
        case scaling do
          nil -> {position, inv}
          %{type: :linear, factor: f} -> {Nx.divide(position, f), inv}
          %{type: :llama3} = s -> {position, bumblebee_llama3(inv, s)}
        end

      angle = Nx.outer(position, inv)
      angle = Nx.concatenate([angle, angle], axis: -1)
      ids = Nx.as_type(position_ids, :s64)
      cos = angle |> Nx.cos() |> Nx.take(ids) |> Nx.new_axis(2) |> Nx.as_type(x.type)
      sin = angle |> Nx.sin() |> Nx.take(ids) |> Nx.new_axis(2) |> Nx.as_type(x.type)
      half = div(size, 2)
      x1 = Nx.slice_along_axis(x, 0, half, axis: 3)
      x2 = Nx.slice_along_axis(x, half, half, axis: 3)
      rotated = Nx.concatenate([Nx.negate(x2), x1], axis: 3)
      Nx.add(Nx.multiply(x, cos), Nx.multiply(rotated, sin))
    end

    # Bumblebee's llama3_inv_frequency, its cond as selects, in f32
    defp bumblebee_llama3(inv, s) do
      f32 = &Nx.tensor(&1, type: :f32)
      low_wl = f32.(s.original_max_positions / s.low_frequency_factor)
      high_wl = f32.(s.original_max_positions / s.high_frequency_factor)
      wavelength = Nx.divide(Nx.multiply(2, Nx.Constants.pi(:f32)), inv)

      smooth =
        Nx.divide(s.original_max_positions, wavelength)
        |> Nx.subtract(s.low_frequency_factor)
        |> Nx.divide(s.high_frequency_factor - s.low_frequency_factor)

      mid =
        Nx.subtract(1, smooth)
        |> Nx.multiply(inv)
        |> Nx.divide(s.factor)
        |> Nx.add(Nx.multiply(smooth, inv))

      Nx.select(
        Nx.less(wavelength, high_wl),
        inv,
        Nx.select(Nx.greater(wavelength, low_wl), Nx.divide(inv, s.factor), mid)
      )
    end

    test "on Nx.BinaryBackend the fallback is Bumblebee's rotary embedding, bit for bit" do
      for type <- [{:f, 32}, {:bf, 16}, {:f, 16}],
          {scaling, base} <- [
            {nil, 10_000},
            {%{type: :linear, factor: 3.0}, 10_000},
            {@llama3, 500_000}
          ] do
        x = rand(type, {2, 9, 2, 32}, 300)
        ids = positions(Enum.to_list(0..8) ++ Enum.to_list(0..8), {2, 9})

        mine =
          reference([x, ids], fn x, p ->
            Emily.Fast.rope(x, p, base: base, scaling: scaling)
          end)

        bumblebee = reference([x, ids], &bumblebee_rope(&1, &2, 32, base, scaling))
        assert Nx.to_binary(mine) == Nx.to_binary(bumblebee), inspect({type, scaling})
      end
    end

    test "gradients (the fallback's) through Emily.Compiler equal the evaluator's on Nx.BinaryBackend" do
      x = rand({:f, 32}, {2, 5, 2, 16}, 500)
      w = rand({:f, 32}, {2, 5, 2, 16}, 501)
      pos = positions(Enum.to_list(7..16), {2, 5})

      loss = fn x, w, p ->
        Nx.Defn.grad(x, fn x ->
          y = Emily.Fast.rope(x, p, dims: 12, base: 500_000, scaling: @llama3)
          Nx.sum(Nx.multiply(y, w))
        end)
      end

      got = jit(loss).(on_emily(x), on_emily(w), on_emily(pos))
      want = reference([x, w, pos], &Nx.Defn.jit(loss, compiler: Nx.Defn.Evaluator).(&1, &2, &3))
      # the transposed rotation of w: the same roundings on both sides
      # but the backends' f32 products of w and cos/sin (exact) and sums
      assert_in_delta Nx.to_number(Nx.reduce_max(Nx.abs(Nx.subtract(got, on_emily(want))))),
                      0.0,
                      1.0e-6
    end

    test "bad arguments raise before any backend runs" do
      x = Nx.iota({1, 3, 2, 8}, type: :f32)
      p = Nx.iota({3})
      rope = &Emily.Fast.rope/3
      name = "Emily.Fast.rope"

      assert_raise ArgumentError,
                   "#{name}: x must be a float tensor (f16, bf16, f32 or f64), got s32",
                   fn -> rope.(Nx.iota({1, 3, 2, 8}, type: :s32), p, []) end

      assert_raise ArgumentError, ~r/x must have rank 4 \(B, S, H, D\), got \{3, 2, 8\}/, fn ->
        rope.(Nx.iota({3, 2, 8}, type: :f32), p, [])
      end

      assert_raise ArgumentError, ~r/positions must be an integer tensor, got f32/, fn ->
        rope.(x, Nx.iota({3}, type: :f32), [])
      end

      assert_raise ArgumentError, ~r/positions must have shape \{3\} or \{1, 3\}/, fn ->
        rope.(x, Nx.iota({4}), [])
      end

      assert_raise ArgumentError,
                   ~r/:dims must be an even integer from 2 to the head size D \(8\), got 5/,
                   fn ->
                     rope.(x, p, dims: 5)
                   end

      assert_raise ArgumentError, ~r/got 10/, fn -> rope.(x, p, dims: 10) end

      assert_raise ArgumentError, ~r/:base must be a number above 0, got 0/, fn ->
        rope.(x, p, base: 0)
      end

      assert_raise ArgumentError, ~r/:traditional must be a boolean/, fn ->
        rope.(x, p, traditional: 1)
      end

      assert_raise ArgumentError, ~r/:scaling must be nil or a map/, fn ->
        rope.(x, p, scaling: %{type: :yarn})
      end

      assert_raise ArgumentError, ~r/:factor must be a number above 0, got nil/, fn ->
        rope.(x, p, scaling: %{type: :linear})
      end

      assert_raise ArgumentError, ~r/:original_max_positions must be a positive integer/, fn ->
        rope.(x, p, scaling: %{type: :dynamic, factor: 2.0})
      end

      assert_raise ArgumentError, ~r/:low_frequency_factor \(4.0\) must be below/, fn ->
        rope.(x, p, scaling: %{@llama3 | low_frequency_factor: 4.0})
      end

      assert_raise ArgumentError, ~r/:inv_frequency must be a float tensor of shape \{4\}/, fn ->
        rope.(x, p, inv_frequency: Nx.iota({3}, type: :f32))
      end

      assert_raise ArgumentError, ~r/:inv_frequency takes no :scaling/, fn ->
        rope.(x, p, inv_frequency: Nx.iota({4}, type: :f32), scaling: %{type: :linear, factor: 2})
      end

      assert_raise ArgumentError, ~r/unknown keys \[:theta\]/, fn -> rope.(x, p, theta: 3) end
    end
  end
end

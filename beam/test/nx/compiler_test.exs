if Code.ensure_loaded?(Nx) do
  defmodule Emily.CompilerTest.Fns do
    import Nx.Defn

    defn(elementwise(x, y), do: Nx.exp(x + y) * x - Nx.sin(y) / 3 + 1.5)

    defn(reductions(x),
      do: {Nx.sum(x, axes: [1]), Nx.reduce_max(x), Nx.argmax(x, axis: 0), Nx.mean(x)}
    )

    defn softmax(x) do
      m = Nx.reduce_max(x, axes: [-1], keep_axes: true)
      e = Nx.exp(x - m)
      e / Nx.sum(e, axes: [-1], keep_axes: true)
    end

    defn layer_norm(x, g, b) do
      mean = Nx.mean(x, axes: [-1], keep_axes: true)
      var = Nx.variance(x, axes: [-1], keep_axes: true)
      (x - mean) / Nx.sqrt(var + 1.0e-5) * g + b
    end

    defn(dense(x, w, b), do: Nx.dot(x, w) + b)
    defn(ints(a, b), do: {Nx.remainder(a * 7, 5) + b, Nx.bitwise_xor(a, b), Nx.left_shift(a, 2)})

    defn(shapes(x),
      do:
        x
        |> Nx.transpose()
        |> Nx.reshape({2, 6})
        |> Nx.slice([0, 1], [2, 3])
        |> Nx.pad(0.0, [{1, 0, 0}, {0, 1, 1}])
    )

    defn(constant_only(_x), do: Nx.iota({2, 3}) * 2)
    defn(passthrough(x, y), do: {x, y * 2})
    defn(take(t, i), do: Nx.take(t, i, axis: 0) |> Nx.sum(axes: [1]))
    defn(with_while(x), do: while({x, i = 0}, i < 3, do: {x * 2, i + 1}))

    defn nested_while(x, n) do
      {x, _, _} =
        while {x, i = 0, n}, i < n do
          {y, _} = while({x, j = 0}, j < 2, do: {Nx.sin(x) + j, j + 1})
          {y * 0.5, i + 1, n}
        end

      x
    end

    defn(with_cond(x), do: if(Nx.sum(x) > 0, do: x + 1, else: x - 1))

    defn multi_cond(x, k, y) do
      e = Nx.exp(x)

      cond do
        k == 0 -> {e * 2, k}
        k == 1 -> {x + y, k + 10}
        true -> {Nx.sin(y) - e, -k}
      end
    end

    defn cond_in_while(x) do
      {x, _} =
        while {x, i = 0}, i < 4 do
          x = if Nx.remainder(i, 2) == 0, do: x * 2, else: x - 1
          {x, i + 1}
        end

      x
    end

    defn nested_cond(x, k) do
      if k > 0 do
        if k > 5, do: x * 100, else: x + k
      else
        x - 1
      end
    end

    defn(with_hook(x), do: hook(Nx.exp(x), :seen))
    defn(with_tuple_hook(x), do: hook({Nx.exp(x), x * 2}, :unseen) |> elem(1))
    defn(probe(a, b), do: Nx.dot(a, b))

    # slices of one value, one negated, added or concatenated (Llama's
    # rotate-half): a fusion/view case that once failed to compile
    defn slices_added(x) do
      n = x + 1
      Nx.negate(n[[.., 0..3]]) + n[[.., 4..7]]
    end

    defn rotate_half(x, w) do
      n = Nx.dot(x, w) |> Nx.reshape({2, 2, 4})
      Nx.concatenate([Nx.negate(n[[.., .., 2..3]]), n[[.., .., 0..1]]], axis: -1) * 0.5 + n
    end
  end

  defmodule Emily.CompilerTest do
    use Emily.Test.NxCase, async: false

    alias Emily.CompilerTest.Fns

    def handle_fallback(_event, _measurements, meta, pid), do: send(pid, {:fallback, meta.reason})

    defp jit(fun, opts \\ []), do: Nx.Defn.jit(fun, Keyword.put(opts, :compiler, Emily.Compiler))
    defp eval(fun), do: Nx.Defn.jit(fun, compiler: Nx.Defn.Evaluator)

    # the compiled graph runs the very callbacks the evaluator runs:
    # results identical bit for bit
    defp assert_same(compiled, evaluated) do
      c = [compiled] |> Nx.Defn.Composite.flatten_list()
      e = [evaluated] |> Nx.Defn.Composite.flatten_list()
      assert length(c) == length(e)

      for {a, b} <- Enum.zip(c, e) do
        assert a.type == b.type and a.shape == b.shape
        assert Nx.to_binary(a) == Nx.to_binary(b)
      end
    end

    defp assert_graph do
      assert {:graph, %{calls: calls}} = Emily.Compiler.last_run()
      calls
    end

    test "compiled functions give the evaluator's results bit for bit" do
      key = Nx.Random.key(7)
      {x, key} = Nx.Random.normal(key, shape: {4, 6})
      {y, key} = Nx.Random.uniform(key, shape: {4, 6})
      {w, key} = Nx.Random.normal(key, shape: {6, 5})
      {b, _} = Nx.Random.normal(key, shape: {5})

      for {fun, args} <- [
            {&Fns.elementwise/2, [x, y]},
            {&Fns.reductions/1, [x]},
            {&Fns.softmax/1, [x]},
            {&Fns.layer_norm/3, [x, Nx.add(y, 1), Nx.subtract(y, 0.5)]},
            {&Fns.dense/3, [x, w, b]},
            {&Fns.shapes/1, [Nx.iota({3, 4}, type: :f32)]},
            {&Fns.ints/2,
             [Nx.iota({2, 3}, type: :s32), Nx.tensor([[3, -4, 5], [6, 7, -8]], type: :s32)]},
            {&Fns.take/2, [x, Nx.tensor([3, 0, 3, 1])]},
            {&Fns.passthrough/2, [x, y]},
            {&Fns.slices_added/1, [Nx.iota({2, 8}, type: :f32)]},
            {&Fns.rotate_half/2, [Nx.iota({4, 3}, type: :f32), Nx.iota({3, 4}, type: :f32)]}
          ] do
        assert_same(apply(jit(fun), args), apply(eval(fun), args))
        assert assert_graph() > 0
      end
    end

    test "f16, bf16, f64, c64 and u8 inputs" do
      for type <- [:f16, :bf16, :f64] do
        x = Nx.iota({3, 4}, type: type) |> Nx.divide(5)
        assert_same(jit(&Fns.softmax/1).(x), eval(&Fns.softmax/1).(x))
      end

      z = Nx.complex(Nx.iota({2, 3}, type: :f32), 0.5)
      assert_same(jit(&Fns.elementwise/2).(z, z), eval(&Fns.elementwise/2).(z, z))

      a = Nx.tensor([[1, 200, 3]], type: :u8)
      assert_same(jit(&Fns.ints/2).(a, a), eval(&Fns.ints/2).(a, a))
    end

    test "constant sub-expressions are computed once, unused calls dropped" do
      x = Nx.tensor([1.0])
      assert_same(jit(&Fns.constant_only/1).(x), Nx.multiply(Nx.iota({2, 3}), 2))
      assert {:graph, %{folded: folded, steps: 0}} = Emily.Compiler.last_run()
      assert folded >= 2

      fun = fn x -> {Nx.exp(x), Nx.sum(Nx.cos(x))} |> elem(0) end
      assert_same(jit(fun).(x), Nx.exp(x))
      assert {:graph, %{steps: 1}} = Emily.Compiler.last_run()
    end

    test "inputs of other backends are copied in, and captured tensors become constants" do
      captured = Nx.tensor([10.0, 20.0], backend: Nx.BinaryBackend)
      fun = fn x -> Nx.add(x, captured) end
      x = Nx.tensor([1.0, 2.0], backend: Nx.BinaryBackend)
      result = jit(fun).(x)
      assert %Emily.Backend{} = result.data
      assert Nx.to_flat_list(result) == [11.0, 22.0]
    end

    test "compiled once per function and input types and shapes" do
      test_pid = self()

      fun = fn x ->
        send(test_pid, :traced)
        Nx.exp(x)
      end

      f = jit(fun)
      f.(Nx.tensor([1.0, 2.0]))
      assert_received :traced
      f.(Nx.tensor([3.0, 4.0]))
      refute_received :traced
      f.(Nx.tensor([3.0, 4.0, 5.0]))
      assert_received :traced
      f.(Nx.tensor([3, 4]))
      assert_received :traced
    end

    test "compiled again when a container's keep fields differ" do
      test_pid = self()
      alias Emily.Test.KeepContainer, as: Scaled

      fun = fn %Scaled{x: x, factor: factor} ->
        send(test_pid, :traced)
        Nx.multiply(x, factor)
      end

      f = jit(fun)
      x = Nx.tensor([1.0, 2.0])
      assert Nx.to_flat_list(f.(%Scaled{x: x, factor: 2})) == [2.0, 4.0]
      assert_received :traced
      assert Nx.to_flat_list(f.(%Scaled{x: x, factor: 3})) == [3.0, 6.0]
      assert_received :traced
      assert Nx.to_flat_list(f.(%Scaled{x: x, factor: 2})) == [2.0, 4.0]
      refute_received :traced
    end

    test "while loops are loops of the graph" do
      x = Nx.tensor([1.0, -3.0])
      assert_same(jit(&Fns.with_while/1).(x), eval(&Fns.with_while/1).(x))
      assert {:graph, %{steps: 1}} = Emily.Compiler.last_run()
      assert_same(jit(&Fns.nested_while/2).(x, 3), eval(&Fns.nested_while/2).(x, 3))
      assert_graph()

      # Nx.Random's threefry is a while loop
      key = Nx.Random.key(11)
      uniform = fn k -> Nx.Random.uniform(k, shape: {4}) end
      assert_same(jit(uniform).(key), eval(uniform).(key))
      assert_graph()
      assert_same(jit(&Nx.Random.split/1).(key), eval(&Nx.Random.split/1).(key))
    end

    test "cond is a conditional of the graph, branches capturing what they read" do
      x = Nx.tensor([1.0, -3.0, 0.5])
      y = Nx.tensor([2.0, 0.25, -1.0])

      for k <- [0, 1, 2, 7] do
        k = Nx.tensor(k)
        assert_same(jit(&Fns.multi_cond/3).(x, k, y), eval(&Fns.multi_cond/3).(x, k, y))
        assert_graph()
        assert_same(jit(&Fns.nested_cond/2).(x, k), eval(&Fns.nested_cond/2).(x, k))
        assert_graph()
      end

      assert_same(jit(&Fns.with_cond/1).(x), eval(&Fns.with_cond/1).(x))
      assert_same(jit(&Fns.with_cond/1).(Nx.negate(x)), eval(&Fns.with_cond/1).(Nx.negate(x)))
      assert_same(jit(&Fns.cond_in_while/1).(x), eval(&Fns.cond_in_while/1).(x))
      assert_graph()
    end

    test "hooks without a function pass their value through in the graph" do
      x = Nx.tensor([1.0, -3.0])
      # Nx 0.7 builds hooks from tokens, which the graph does not hold:
      # there they run on the evaluator
      tokens? = not function_exported?(Nx.Defn.Expr, :hook, 2)
      assert_same(jit(&Fns.with_hook/1).(x), Nx.exp(x))
      if tokens?, do: assert({:fallback, _} = Emily.Compiler.last_run()), else: assert_graph()
      assert_same(jit(&Fns.with_tuple_hook/1).(x), Nx.multiply(x, 2))
      if tokens?, do: assert({:fallback, _} = Emily.Compiler.last_run()), else: assert_graph()
    end

    test "hooks with a function run on the evaluator, with a telemetry event" do
      ref = make_ref()
      pid = self()

      :telemetry.attach(
        "compiler-test-#{inspect(ref)}",
        [:emily, :compiler, :fallback],
        &__MODULE__.handle_fallback/4,
        pid
      )

      try do
        x = Nx.tensor([1.0, -3.0])
        seen = fn t -> send(pid, {:hook, Nx.to_flat_list(t)}) end
        jit(&Fns.with_hook/1, hooks: %{seen: seen}).(x)
        assert_received {:hook, [_, _]}
        assert_received {:fallback, "the expression has " <> _}
      after
        :telemetry.detach("compiler-test-#{inspect(ref)}")
      end

      assert_raise ArgumentError,
                   ~r/Emily.Compiler cannot compile this function: the expression has :(hook|attach_token)/,
                   fn ->
                     jit(&Fns.with_hook/1,
                       compiler_fallback: :raise,
                       hooks: %{seen: &Function.identity/1}
                     ).(Nx.tensor([2.0]))
                   end

      assert_raise ArgumentError, ~r/:compiler_fallback must be :eval or :raise/, fn ->
        jit(&Fns.elementwise/2, compiler_fallback: :never).(Nx.tensor(1.0), Nx.tensor(2.0))
      end
    end

    test "the :dot_precision option" do
      # 16777217*3 - 50331648: 3 when the s32 is read exactly, 0 from f32
      a = Nx.tensor([16_777_217, 1], type: :s32)
      b = Nx.tensor([3.0, -50_331_648.0])
      assert Nx.to_number(jit(&Fns.probe/2, dot_precision: :highest).(a, b)) == 3.0
      assert Nx.to_number(jit(&Fns.probe/2, dot_precision: :fast).(a, b)) == 0.0
    end

    test "a graph can be saved for emily_run" do
      path =
        Path.join(
          System.tmp_dir!(),
          "emily_compiler_test_#{System.unique_integer([:positive])}.emg"
        )

      try do
        jit(&Fns.softmax/1, save_graph: path).(Nx.iota({2, 3}, type: :f32))
        assert <<"EMGRAPH", 0, 1, 0, 0, 0, _::binary>> = File.read!(path)
      after
        File.rm(path)
      end
    end

    test "Nx.Serving with defn_options: [compiler: Emily.Compiler]" do
      serving =
        Nx.Serving.new(fn opts -> Nx.Defn.jit(&Fns.softmax/1, opts) end, compiler: Emily.Compiler)
        |> Nx.Serving.client_preprocessing(fn t -> {Nx.Batch.stack([t]), :ok} end)

      x = Nx.tensor([1.0, 2.0, 3.0])
      result = Nx.Serving.run(serving, x)
      assert_same(Nx.squeeze(result, axes: [0]), Fns.softmax(x))
    end

    test "a deallocated input is an error, the graph still runs afterwards" do
      f = jit(&Fns.softmax/1)
      x = Nx.tensor([1.0, 2.0])
      f.(x)
      dead = Nx.tensor([3.0, 4.0])
      Nx.backend_deallocate(dead)
      assert_raise ArgumentError, ~r/deallocated/, fn -> f.(dead) end
      assert_same(f.(x), Fns.softmax(x))
    end
  end
end

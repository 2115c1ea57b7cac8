if Code.ensure_loaded?(Nx) do
  defmodule Emily.Test.OtherBackend do
    # A minimal third backend holding raw bytes, to check that tensors of
    # backends the NIF cannot read are moved to Emily.
    defstruct [:bin]

    def from_binary(out, bin, _opts), do: %{out | data: %__MODULE__{bin: IO.iodata_to_binary(bin)}}
    def to_binary(%{data: %__MODULE__{bin: bin}}, _limit), do: bin

    def backend_copy(%{data: %__MODULE__{bin: bin}} = t, backend, opts),
      do: backend.from_binary(t, bin, opts)

    def backend_transfer(t, backend, opts), do: backend_copy(t, backend, opts)
  end

  defmodule Emily.BackendTest do
    use ExUnit.Case, async: false
    @moduletag :nx

    setup do
      Nx.default_backend(Emily.Backend)
      Application.delete_env(:emily, :fallback)
      Application.delete_env(:emily, :linalg)
      :ok
    end

    # 16777217*3 - 50331648: 3 with the s32 read exactly (:highest), 0 when
    # it is first an f32 (:fast)
    defp precision_probe do
      a = Nx.tensor([16_777_217, 1], type: :s32)
      b = Nx.tensor([3.0, -50_331_648.0], type: :f32)
      conv = Nx.conv(Nx.reshape(a, {1, 1, 2}), Nx.reshape(b, {1, 1, 2}))
      {Nx.to_number(Nx.dot(a, b)), Nx.to_number(Nx.squeeze(conv))}
    end

    test "dot and conv precision per process: with_dot_precision/2 and the backend option" do
      # the suite runs at :highest (test_helper.exs)
      assert {3.0, 3.0} = precision_probe()
      assert {+0.0, +0.0} = Emily.with_dot_precision(:fast, &precision_probe/0)

      assert {+0.0, +0.0} =
               Nx.with_default_backend({Emily.Backend, dot_precision: :fast}, &precision_probe/0)

      assert {3.0, 3.0} =
               Emily.with_dot_precision(:highest, fn ->
                 Nx.with_default_backend({Emily.Backend, dot_precision: :fast}, &precision_probe/0)
               end)

      assert Emily.dot_precision() == :highest

      assert_raise ArgumentError, ~r/dot precision must be :highest or :fast, got: :low/, fn ->
        Nx.default_backend({Emily.Backend, dot_precision: :low})
      end

      assert_raise ArgumentError, ~r/accepts only the :device and :dot_precision options/, fn ->
        Nx.default_backend({Emily.Backend, precision: :fast})
      end
    end

    def handle_event(event, measurements, metadata, pid),
      do: send(pid, {event, measurements, metadata})

    # sends the events to this process; returns the handler's id (to detach)
    defp attach(events) do
      id = {__MODULE__, make_ref()}
      :telemetry.attach_many(id, events, &__MODULE__.handle_event/4, self())
      id
    end

    defp emily?(%Nx.Tensor{data: %Emily.Backend{}}), do: true
    defp emily?(_), do: false

    test "config :emily, linalg: picks LAPACK (default) or Nx's algorithms for qr/eigh/svd" do
      a = Nx.tensor([[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 5.0]], type: :f64)
      reference = Nx.backend_copy(a, Nx.BinaryBackend)

      residual = fn {w, v} ->
        Nx.subtract(Nx.dot(a, v), Nx.multiply(v, w))
        |> Nx.abs()
        |> Nx.reduce_max()
        |> Nx.to_number()
      end

      # LAPACK: accurate to f64, where Nx's Jacobi stops at eps 1e-4
      lapack = Nx.LinAlg.eigh(a)
      assert residual.(lapack) < 1.0e-13

      # :reference is the loaded Nx's own algorithms, bit for bit (Nx 0.13's
      # Jacobi; Nx 0.7's Hessenberg/QR iterations, much less accurate)
      Application.put_env(:emily, :linalg, :reference)
      {w, v} = Nx.LinAlg.eigh(a)
      {w_nx, v_nx} = Nx.with_default_backend(Nx.BinaryBackend, fn -> Nx.LinAlg.eigh(reference) end)
      assert Nx.to_binary(w) == Nx.to_binary(w_nx)
      assert Nx.to_binary(v) == Nx.to_binary(v_nx)
      # (without full matrices: Nx 0.13's full svd calls the qr below)
      {_u, s, _vt} = Nx.LinAlg.svd(a, full_matrices?: false)

      {_, s_nx, _} =
        Nx.with_default_backend(Nx.BinaryBackend, fn ->
          Nx.LinAlg.svd(reference, full_matrices?: false)
        end)

      assert Nx.to_binary(s) == Nx.to_binary(s_nx)

      # qr: on Nx 0.13 the corpus's rank-1 Householder updates (Nx main),
      # where the 0.13.1 tag multiplies by explicit reflection matrices and
      # rounds differently in the last bit (docs/semantics.md); on Nx 0.7
      # the explicit products, as Nx 0.7 computes them
      {q, r} = Nx.LinAlg.qr(a)
      {q_nx, r_nx} = Nx.with_default_backend(Nx.BinaryBackend, fn -> Nx.LinAlg.qr(reference) end)

      if Code.ensure_loaded?(Nx.LinAlg.BlockEigh) do
        last_bits = fn x, y ->
          Nx.subtract(x, Nx.backend_copy(y, Emily.Backend))
          |> Nx.abs()
          |> Nx.reduce_max()
          |> Nx.to_number()
        end

        assert last_bits.(q, q_nx) < 1.0e-14 and last_bits.(r, r_nx) < 1.0e-14
      else
        assert Nx.to_binary(q) == Nx.to_binary(q_nx) and Nx.to_binary(r) == Nx.to_binary(r_nx)
      end

      Application.put_env(:emily, :linalg, :fast)

      assert_raise ArgumentError,
                   ~r/invalid :linalg received. Expected one of \[:lapack, :reference\]/,
                   fn ->
                     Nx.LinAlg.qr(a)
                   end
    end

    test "triangular_solve takes config :emily, linalg: (the CPU computes Nx's bits either way)" do
      a = Nx.tensor([[3, 0, 0, 0], [2, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1]])
      b = Nx.tensor([4, 2, 4, 2])
      want = <<1.3333334::float-32-native, -0.6666667::float-32-native>>
      want = want <> <<2.6666667::float-32-native, -1.3333334::float-32-native>>

      for method <- [:lapack, :reference] do
        Application.put_env(:emily, :linalg, method)
        assert Nx.to_binary(Nx.LinAlg.triangular_solve(a, b)) == want
      end

      Application.put_env(:emily, :linalg, :fast)

      assert_raise ArgumentError, ~r/invalid :linalg received/, fn ->
        Nx.LinAlg.triangular_solve(a, b)
      end
    end

    test "init validates options" do
      assert Emily.Backend.init([]) == [device: :cpu]
      assert Emily.Backend.init(device: "cpu") == [device: :cpu]

      assert_raise ArgumentError, ~r/only the :device and :dot_precision options/, fn ->
        Emily.Backend.init(foo: 1)
      end

      # every unknown key is named, known ones alongside do not hide them
      assert_raise ArgumentError,
                   "Emily.Backend accepts only the :device and :dot_precision options, got: [:foo, :bar]",
                   fn -> Emily.Backend.init(device: :cpu, foo: 1, bar: 2) end

      assert_raise ArgumentError, ~r/options must be a keyword list, got: \[:cpu\]/, fn ->
        Emily.Backend.init([:cpu])
      end

      assert Emily.Backend.init(device: :cpu, dot_precision: :fast) ==
               [device: :cpu, dot_precision: :fast]

      assert_raise ArgumentError, ~r/unknown device/, fn -> Emily.Backend.init(device: :tpu) end

      assert_raise ArgumentError, ~r/cuda/, fn ->
        Emily.Backend.init(device: {:cuda, 99})
      end
    end

    # The inputs of the next test: random matrices, on Nx.BinaryBackend.
    defp reference_inputs do
      key = Nx.Random.key(11)

      for {shape, type} <- [{{3, 3}, :f32}, {{5, 5}, :f64}, {{2, 4, 4}, :f32}, {{6, 6}, :f64}],
          reduce: {[], key} do
        {acc, key} ->
          {m, key} = Nx.Random.uniform(key, -2.0, 2.0, shape: shape, type: type)
          {[Nx.backend_copy(m, Nx.BinaryBackend) | acc], key}
      end
      |> elem(0)
      |> Enum.reverse()
    end

    defp symmetric(m), do: Nx.divide(Nx.add(m, Nx.LinAlg.adjoint(m)), 2)

    defp same_bits?(emily, nx) when is_tuple(emily),
      do:
        Enum.zip(Tuple.to_list(emily), Tuple.to_list(nx))
        |> Enum.all?(fn {e, n} -> same_bits?(e, n) end)

    defp same_bits?(emily, nx), do: Nx.to_binary(emily) == Nx.to_binary(nx)

    # Nx.LinAlg's functions on Nx.BinaryBackend alone (with Emily as the
    # default backend, the constants of Nx's defn algorithms would bring
    # Emily into the reference's computation)
    defp on_binary(fun), do: Nx.with_default_backend(Nx.BinaryBackend, fun)

    # fun on Emily's copy of m gives the bits fun gives on Nx.BinaryBackend
    defp assert_reference_bits(name, fun, m) do
      assert same_bits?(fun.(Nx.backend_copy(m, Emily.Backend)), on_binary(fn -> fun.(m) end)),
             "#{name} of #{inspect(m)}"
    end

    test "linalg: :reference gives this Nx's Nx.BinaryBackend bits for lu, determinant, solve, qr, eigh and svd" do
      Application.put_env(:emily, :linalg, :reference)
      nx07? = not Code.ensure_loaded?(Nx.LinAlg.BlockEigh)

      ints =
        Nx.tensor([[0, 2, 1, 3], [1, 1, 1, 1], [3, 0, 2, 1], [2, 1, 0, 4]],
          backend: Nx.BinaryBackend
        )

      hermitian =
        Nx.tensor(
          [
            [2, Complex.new(1, -1), 0],
            [Complex.new(1, 1), 3, Complex.new(0, 2)],
            [0, Complex.new(0, -2), 1]
          ],
          type: :c64,
          backend: Nx.BinaryBackend
        )

      for m <- reference_inputs() ++ [ints] do
        e = Nx.backend_copy(m, Emily.Backend)

        assert_reference_bits("lu", &Nx.LinAlg.lu/1, m)

        assert_reference_bits("determinant", &Nx.LinAlg.determinant/1, m)

        b = Nx.iota(Nx.shape(m), backend: Nx.BinaryBackend)

        assert same_bits?(
                 Nx.LinAlg.solve(e, Nx.backend_copy(b, Emily.Backend)),
                 on_binary(fn -> Nx.LinAlg.solve(m, b) end)
               ),
               "solve with #{inspect(m)}"

        s = on_binary(fn -> symmetric(m) end)

        assert_reference_bits("eigh", &Nx.LinAlg.eigh/1, s)

        # svd without full matrices (Nx 0.13's full svd calls the qr that
        # the 0.13.1 tag rounds differently, see the test above)
        assert_reference_bits("svd", &Nx.LinAlg.svd(&1, full_matrices?: false), m)

        if nx07? do
          assert_reference_bits("qr", &Nx.LinAlg.qr/1, m)
          assert_reference_bits("full svd", &Nx.LinAlg.svd/1, m)
        end
      end

      if nx07? do
        assert_reference_bits("eigh", &Nx.LinAlg.eigh/1, hermitian)

        assert_raise ArgumentError, ~r/matrix must be hermitian/, fn ->
          Nx.LinAlg.eigh(Nx.tensor([[1.0, 2.0], [0.0, 1.0]]))
        end
      end
    end

    # Small matrices of small rationals: exact zeros and signed zeros
    # appear, which the corpus's ULP comparison does not tell apart.
    test "linalg: :reference matches Nx.BinaryBackend's bits on random small matrices" do
      Application.put_env(:emily, :linalg, :reference)
      :rand.seed(:exsss, {7, 8, 9})

      for _ <- 1..40 do
        n = Enum.random(2..6)
        type = Enum.random([:f32, :f64, :s64, :c64])
        vals = for _ <- 1..(n * n), do: Enum.random(-9..9) / Enum.random([1, 2, 3, 4])
        vals = if type == :s64, do: Enum.map(vals, &round/1), else: vals
        m = Nx.tensor(vals, type: type, backend: Nx.BinaryBackend) |> Nx.reshape({n, n})
        assert_reference_bits("lu", &Nx.LinAlg.lu/1, m)

        assert_reference_bits("determinant", &Nx.LinAlg.determinant/1, m)

        s = on_binary(fn -> symmetric(m) end)

        assert_reference_bits("eigh", &Nx.LinAlg.eigh/1, s)

        spd = on_binary(fn -> Nx.add(Nx.dot(Nx.LinAlg.adjoint(m), m), Nx.eye(n, type: type)) end)

        assert_reference_bits("cholesky", &Nx.LinAlg.cholesky/1, spd)
      end
    end

    test "element-wise, reductions and shapes run on Emily" do
      t = Nx.tensor([[1, 2], [3, 4]])
      assert emily?(t)
      r = t |> Nx.add(1) |> Nx.multiply(2) |> Nx.sum(axes: [0])
      assert emily?(r)
      assert Nx.to_list(r) == [12, 16]
      assert Nx.to_list(Nx.transpose(t)) == [[1, 3], [2, 4]]
      assert Emily.Backend.device(t) == :cpu
    end

    test "Nx.Defn's evaluator, gradients and Nx.Random run on Emily" do
      f = Nx.Defn.jit(fn x, y -> Nx.sum(Nx.multiply(Nx.exp(x), y), axes: [1]) end)
      r = f.(Nx.iota({2, 3}, type: :f32), Nx.tensor(2.0))
      assert emily?(r)
      assert_in_delta Enum.at(Nx.to_list(r), 0), 2 * (1 + :math.exp(1) + :math.exp(2)), 1.0e-4

      g = Nx.Defn.grad(fn x -> Nx.sum(Nx.sin(x)) end).(Nx.tensor([0.0, 1.0]))
      assert_in_delta Enum.at(Nx.to_list(g), 1), :math.cos(1.0), 1.0e-6

      {u, _key} = Nx.Random.uniform(Nx.Random.key(42), shape: {3})
      assert emily?(u)
      assert Enum.all?(Nx.to_list(u), &(&1 >= 0 and &1 < 1))
    end

    test "engine errors raise ArgumentError with the engine's message" do
      t = Nx.tensor([1.0, 2.0])
      wrong = Nx.template({3}, {:f, 32})

      assert_raise ArgumentError, ~r/add: output 0 is f32\{2\} but Nx expects f32\{3\}/, fn ->
        Emily.Backend.add(wrong, t, t)
      end
    end

    test "a singular triangular_solve or solve raises Nx.BinaryBackend's exact text" do
      a = Nx.tensor([[0.0, 0.0], [1.0, 1.0]])
      b = Nx.tensor([1.0, 2.0])
      msg = "can't solve for singular matrix"

      assert_raise ArgumentError, msg, fn -> Nx.LinAlg.triangular_solve(a, b) end

      assert_raise ArgumentError, msg, fn ->
        Nx.LinAlg.solve(Nx.tensor([[1.0, 2.0], [2.0, 4.0]]), b)
      end

      assert_raise ArgumentError, msg, fn ->
        Nx.LinAlg.solve(Nx.tensor([[0.0, 0.0], [0.0, 0.0]]), b)
      end
    end

    test "Nx.BinaryBackend tensors mix in; other backends are moved to Emily" do
      b = Nx.tensor([10, 20], backend: Nx.BinaryBackend)
      e = Nx.tensor([1, 2])
      r = Nx.add(e, b)
      assert emily?(r)
      assert Nx.to_list(r) == [11, 22]

      other = Emily.Test.OtherBackend.from_binary(Nx.template({2}, e.type), Nx.to_binary(e), [])
      r = Emily.Backend.add(Nx.template({2}, e.type), e, other)
      assert Nx.to_list(r) == [2, 4]
    end

    test "backend_transfer, backend_copy and deallocation" do
      t = Nx.tensor([1.5, 2.5])
      b = Nx.backend_copy(t, Nx.BinaryBackend)
      assert %Nx.BinaryBackend{} = b.data
      back = Nx.backend_transfer(b, Emily.Backend)
      assert emily?(back)
      assert Nx.to_list(back) == [1.5, 2.5]

      copy = Nx.backend_copy(t, {Emily.Backend, device: :cpu})
      assert copy.data.ref != t.data.ref
      assert Nx.backend_transfer(t, {Emily.Backend, device: :cpu}) == t

      moved = Nx.backend_transfer(copy, Nx.BinaryBackend)
      assert Nx.to_list(moved) == [1.5, 2.5]
      assert Nx.backend_deallocate(copy) == :already_deallocated
      assert Nx.backend_deallocate(t) == :ok
      assert_raise ArgumentError, ~r/deallocated/, fn -> Nx.add(t, 1) end
    end

    test "to_binary is zero-copy and survives deallocation" do
      t = Nx.iota({4}, type: :f32)
      bin = Nx.to_binary(t)
      Nx.backend_deallocate(t)

      assert bin ==
               <<0.0::float-32-native, 1.0::float-32-native, 2.0::float-32-native,
                 3.0::float-32-native>>

      assert Nx.to_binary(Nx.iota({4}, type: :u8), limit: 2) == <<0, 1>>
    end

    test "to_batched with :repeat and :discard" do
      t = Nx.iota({5, 2})

      assert Nx.to_batched(t, 2) |> Enum.map(&Nx.to_list/1) ==
               [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9], [0, 1]]]

      assert Nx.to_batched(t, 2, leftover: :discard) |> Enum.map(&Nx.to_list/1) ==
               [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]

      assert Nx.to_batched(t, 5) |> Enum.map(&Nx.to_list/1) == [Nx.to_list(t)]
    end

    test "inspect" do
      assert inspect(Nx.tensor([1, 2, 3])) =~ "[1, 2, 3]"
      big = Nx.iota({1000})
      assert inspect(big, limit: 3) =~ "[0, 1, 2, ...]"
    end

    test "complex numbers and non-finite constants" do
      c = Nx.tensor([Complex.new(1, 2)])
      assert Nx.to_list(Nx.add(c, Complex.new(0, 1))) == [Complex.new(1.0, 3.0)]
      assert Nx.to_list(Nx.add(Nx.tensor([1.0]), :infinity)) == [:infinity]
      assert Nx.to_list(Nx.multiply(Nx.tensor([1.0]), :nan)) == [:nan]
    end

    test "Nx 0.7's take form (a bare axis) and 0.13's opts reach the same callback" do
      t = Nx.tensor([[1, 2], [3, 4]])
      idx = Nx.tensor([1, 0])
      out = Nx.template({2, 2}, t.type)

      case Emily.Native.callbacks() |> Enum.member?(:take) do
        true ->
          a = Emily.Backend.take(out, t, idx, 0)
          b = Emily.Backend.take(out, t, idx, axis: 0)
          assert Nx.to_list(a) == [[3, 4], [1, 2]]
          assert Nx.to_list(a) == Nx.to_list(b)

        false ->
          assert_raise ArgumentError, ~r/take: unknown callback/, fn ->
            Emily.Backend.take(out, t, idx, 0)
          end
      end
    end

    test "unknown Nx.Block structs run Nx's default implementation" do
      t = Nx.tensor([1, 2])
      out = Nx.template({2}, t.type)
      r = Emily.Backend.block(%URI{}, out, [t], fn %URI{}, x -> Nx.add(x, 1) end)
      assert Nx.to_list(r) == [2, 3]
    end

    test "reduce and window_reduce fall back with telemetry; :raise refuses" do
      id = attach([[:emily, :fallback, :start], [:emily, :fallback, :stop]])

      t = Nx.tensor([[1, 2], [3, 4]])
      r = Nx.reduce(t, 0, [axes: [1]], fn a, b -> Nx.add(a, b) end)
      assert emily?(r)
      assert Nx.to_list(r) == [3, 7]
      assert_received {[:emily, :fallback, :start], _, %{op: :reduce, shapes: [{2, 2}, {}]}}
      assert_received {[:emily, :fallback, :stop], _, %{op: :reduce}}

      w = Nx.window_reduce(t, 0, {1, 2}, fn a, b -> Nx.max(a, b) end)
      assert Nx.to_list(w) == [[2], [4]]
      assert_received {[:emily, :fallback, :start], _, %{op: :window_reduce}}

      Application.put_env(:emily, :fallback, :raise)

      assert_raise ArgumentError, ~r/reduce takes an Elixir function/, fn ->
        Nx.reduce(t, 0, fn a, b -> Nx.add(a, b) end)
      end

      :telemetry.detach(id)
    end

    test "eval and to_binary telemetry" do
      id =
        attach([[:emily, :eval, :stop], [:emily, :to_binary, :stop], [:emily, :eval, :exception]])

      a = Nx.tensor([1.0, 2.0])
      b = Nx.tensor([3, 4], type: :s32)
      _ = Nx.to_binary(Nx.add(a, b))
      :telemetry.detach(id)

      assert_received {[:emily, :eval, :stop], %{duration: d},
                       %{op: :add, shapes: [{2}, {2}], types: [{:f, 32}, {:s, 32}]}}

      assert is_integer(d)
      assert_received {[:emily, :to_binary, :stop], _, %{op: :to_binary, shapes: [{2}]}}
    end

    test "streams: 8 processes on their own streams share one tensor" do
      shared = Nx.iota({64}, type: :f32)

      tasks =
        for p <- 1..8 do
          Task.async(fn ->
            stream = Emily.Stream.new(:cpu)

            Emily.Stream.run(stream, fn ->
              assert Emily.Stream.current() == stream

              for i <- 1..200 do
                r = shared |> Nx.multiply(p) |> Nx.add(i) |> Nx.sum() |> Nx.to_number()
                assert r == p * 2016 + 64 * i
              end
            end)

            Emily.Stream.synchronize(stream)
            assert Emily.Stream.current() == nil
          end)
        end

      Enum.each(tasks, &Task.await(&1, 60_000))
    end

    test "to_pointer and from_pointer" do
      t = Nx.tensor([1, 2, 3], type: :u8)
      p = Emily.Backend.to_pointer(t, mode: :local)
      assert p.address > 0 and p.data_size == 3

      assert_raise ArgumentError, ~r/only mode: :local/, fn ->
        Emily.Backend.to_pointer(t, mode: :ipc)
      end

      back = Emily.Backend.from_pointer(p, {:u, 8}, {3}, [], [])
      assert Nx.to_list(back) == [1, 2, 3]
      two = Emily.Backend.from_pointer(p, {:u, 8}, {2}, [device: :cpu], names: [:x])
      assert Nx.to_list(two) == [1, 2] and two.names == [:x]

      assert_raise ArgumentError, ~r/bytes asked for/, fn ->
        Emily.Backend.from_pointer(p, {:f, 32}, {3}, [], [])
      end

      foreign = %{p | address: p.address + 1}

      assert_raise ArgumentError, ~r/not handed out by Emily/, fn ->
        Emily.Backend.from_pointer(foreign, {:u, 8}, {1}, [], [])
      end

      Nx.backend_deallocate(t)

      assert_raise ArgumentError, ~r/not handed out by Emily/, fn ->
        Emily.Backend.from_pointer(p, {:u, 8}, {3}, [], [])
      end
    end
  end
end

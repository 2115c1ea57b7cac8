if Code.ensure_loaded?(Nx) do
  defmodule Emily.Test.NxSuiteFindings do
    # Helpers shared by the two modules below: run the same computation on
    # Emily.Backend and on the loaded Nx's Nx.BinaryBackend and compare.
    import ExUnit.Assertions

    # Nx.BinaryBackend's own answer: also Nx's defn fallbacks (eigh, ...)
    # on the evaluator, whatever the default defn compiler
    def on_binary(fun) do
      previous = Nx.Defn.default_options(compiler: Nx.Defn.Evaluator)

      try do
        Nx.with_default_backend(Nx.BinaryBackend, fun)
      after
        Nx.Defn.default_options(previous)
      end
    end

    def binary(%Nx.Tensor{} = t), do: Nx.backend_copy(t, Nx.BinaryBackend)
    def emily(%Nx.Tensor{} = t), do: Nx.backend_copy(t, Emily.Backend)

    def assert_emily(%Nx.Tensor{data: data} = t) do
      assert %Emily.Backend{} = data, "expected an Emily.Backend tensor, got #{inspect(t)}"
      t
    end

    # same type, shape and bytes
    def assert_same_bits(%Nx.Tensor{} = e, %Nx.Tensor{} = b, what) do
      assert_emily(e)

      assert {e.type, e.shape, Nx.to_binary(e)} == {b.type, b.shape, Nx.to_binary(b)},
             "#{what}: Emily #{inspect(e)}, Nx.BinaryBackend #{inspect(b)}"
    end

    # e (Emily's result) against b (Nx.BinaryBackend's, or the property's
    # expected value), compared on Nx.BinaryBackend with the given
    # tolerances; same shape (and the same type unless type?: false)
    def assert_close(%Nx.Tensor{} = e, %Nx.Tensor{} = b, what, tol, opts \\ []) do
      if Keyword.get(opts, :type?, true), do: assert(e.type == b.type, "#{what}: types differ")
      assert e.shape == b.shape, "#{what}: shapes differ"
      {e, b} = {binary(e), binary(b)}

      close? = on_binary(fn -> Nx.all_close(e, b, atol: tol, rtol: tol) |> Nx.to_number() end) == 1

      assert close?, "#{what} (tolerance #{tol}):\nEmily #{inspect(e)}\nexpected #{inspect(b)}"
    end

    # fun raises the same exception with the same message on Emily and on
    # Nx.BinaryBackend (the expected message is the one Nx.BinaryBackend
    # gives). fun builds its tensors itself, on the default backend: an
    # Emily tensor created outside would make both runs Emily's.
    def assert_same_raise(exception, fun) do
      result =
        try do
          {:returned, on_binary(fun)}
        rescue
          e -> {:raised, e}
        end

      assert {:raised, %{__struct__: ^exception} = e} = result,
             "Nx.BinaryBackend gave #{inspect(result)}"

      message = Exception.message(e)

      assert_raise exception, message, fun
      message
    end
  end

  defmodule Emily.NxSuiteFindingsTest do
    # Regression tests for what running Nx's own test suite on Emily.Backend
    # found (scripts/nx_suite): each compares Emily.Backend with the loaded
    # Nx's Nx.BinaryBackend on the same inputs.
    use Emily.Test.NxCase, async: true

    import Emily.Test.NxSuiteFindings

    test "Nx.all_close takes equal_nan: nil as false, as Nx.BinaryBackend does" do
      pairs = [
        {[1.0, :nan], [1.0, :nan]},
        {[1.0, 2.0], [1.0, 2.0000001]},
        {[1.0, 2.0], [1.0, 3.0]},
        {[:infinity, 1.0], [:infinity, 1.0]}
      ]

      for {x, y} <- pairs, equal_nan <- [nil, false, true] do
        run = fn -> Nx.all_close(Nx.tensor(x), Nx.tensor(y), equal_nan: equal_nan) end

        assert_same_bits(
          run.(),
          on_binary(run),
          "all_close(#{inspect(x)}, #{inspect(y)}, equal_nan: #{inspect(equal_nan)})"
        )
      end

      nan = Nx.tensor([1.0, :nan])
      assert Nx.to_number(Nx.all_close(nan, nan, equal_nan: nil)) == 0
      assert Nx.to_number(Nx.all_close(nan, nan, equal_nan: true)) == 1
    end

    test "complex atan2 works on real parts and raises Complex.atan2's error otherwise" do
      run = fn -> Nx.atan2(Complex.new(7, 0), Complex.new(2.0, 0.0)) end
      e = run.()
      assert_same_bits(e, on_binary(run), "atan2(7+0i, 2+0i)")
      assert e.type == {:c, 64}
      assert_in_delta Complex.real(Nx.to_number(e)), 1.2924967, 1.0e-7
      assert Complex.imag(Nx.to_number(e)) == 0.0

      c = &Complex.new(&1, 0)

      for type <- [:c64, :c128] do
        run = fn ->
          y = Nx.tensor(Enum.map([7, -7, 0.5, -0.5, 3, 0, -2], c), type: type)
          x = Nx.tensor(Enum.map([2, 2, -1, -1, 0, -1, 0.25], c), type: type)
          Nx.atan2(y, x)
        end

        assert_close(
          run.(),
          on_binary(run),
          "atan2 #{type}",
          if(type == :c64, do: 1.0e-7, else: 1.0e-15)
        )
      end

      message = "Complex.atan2 only accepts real numbers as arguments"

      for {y, x} <- [
            {Complex.new(7, 1), Complex.new(2.0, 0.0)},
            {Complex.new(7, 0), Complex.new(2.0, -1.0)},
            {Complex.new(7, 1), Complex.new(2.0, 1.0)}
          ] do
        assert assert_same_raise(ArithmeticError, fn -> Nx.atan2(y, x) end) == message
      end
    end

    test "complex rsqrt of non-finite values is Nx.BinaryBackend's 1 / sqrt" do
      run = fn -> Nx.rsqrt(Complex.new(:infinity, 3)) end
      e = run.()
      assert_same_bits(e, on_binary(run), "rsqrt(inf+3i)")
      assert Nx.to_number(e) == Complex.new(0.0, 0.0)

      values = [
        Complex.new(:infinity, 3),
        Complex.new(:infinity, 0),
        Complex.new(:infinity, -2),
        Complex.new(:neg_infinity, 3),
        Complex.new(3, :infinity),
        Complex.new(3, :neg_infinity),
        Complex.new(:infinity, :infinity),
        Complex.new(:nan, 1),
        Complex.new(1, :nan),
        Complex.new(4, 0),
        Complex.new(-4, 0)
      ]

      for type <- [:c64, :c128] do
        run = fn -> Nx.rsqrt(Nx.tensor(values, type: type)) end
        assert_same_bits(run.(), on_binary(run), "rsqrt #{type}")
      end
    end

    test "negative shift counts and float remainder of non-finite values or by zero raise as on Nx.BinaryBackend" do
      assert assert_same_raise(ArgumentError, fn -> Nx.left_shift(1, -1) end) ==
               "cannot left shift by -1"

      assert assert_same_raise(ArgumentError, fn -> Nx.right_shift(1, -1) end) ==
               "cannot right shift by -1"

      assert assert_same_raise(ArgumentError, fn ->
               Nx.left_shift(Nx.tensor([1, 2]), Nx.tensor([1, -3]))
             end) == "cannot left shift by -3"

      assert assert_same_raise(ArgumentError, fn ->
               Nx.right_shift(Nx.tensor([1, 2], type: :s8), Nx.tensor([0, -2], type: :s8))
             end) == "cannot right shift by -2"

      assert_same_raise(ArgumentError, fn ->
        Nx.remainder(Nx.tensor(:neg_infinity, type: :f32), Nx.tensor(:infinity, type: :f32))
      end)

      assert_same_raise(ArgumentError, fn ->
        Nx.remainder(Nx.tensor(:nan, type: :f32), Nx.tensor(2.0, type: :f32))
      end)

      assert_same_raise(ArgumentError, fn ->
        Nx.remainder(Nx.tensor(1.0, type: :f32), Nx.tensor(:infinity, type: :f32))
      end)

      assert assert_same_raise(ArithmeticError, fn -> Nx.remainder(1.0, 0.0) end) ==
               "bad argument in arithmetic expression"

      assert assert_same_raise(ArithmeticError, fn ->
               Nx.remainder(Nx.tensor([1.0, 2.0], type: :f64), Nx.tensor([1.0, 0.0], type: :f64))
             end) == "bad argument in arithmetic expression"

      # integer quotient and remainder are div and rem: a zero divisor raises
      for op <- [:quotient, :remainder], type <- [:s32, :u8, :s64] do
        assert assert_same_raise(ArithmeticError, fn ->
                 apply(Nx, op, [Nx.tensor([7, 8], type: type), Nx.tensor([2, 0], type: type)])
               end) == "bad argument in arithmetic expression"
      end
    end

    test "out-of-bounds indices raise Nx.BinaryBackend's exact message" do
      # each call builds its tensors, on the default backend
      t = fn -> Nx.iota({2, 2}) end

      calls = [
        {"gather", fn -> Nx.gather(t.(), Nx.tensor([[3, 0]])) end},
        {"gather (axis 1)", fn -> Nx.gather(t.(), Nx.tensor([[0, 0], [0, 3]])) end},
        {"gather (negative)", fn -> Nx.gather(t.(), Nx.tensor([[-1, 0]])) end},
        {"indexed_add", fn -> Nx.indexed_add(t.(), Nx.tensor([[3, 0]]), Nx.tensor([1])) end},
        {"indexed_add (axis 1)",
         fn -> Nx.indexed_add(t.(), Nx.tensor([[0, 0], [1, 3]]), Nx.tensor([1, 1])) end},
        {"indexed_put", fn -> Nx.indexed_put(t.(), Nx.tensor([[3, 0]]), Nx.tensor([1])) end},
        {"indexed_put (axis 1)",
         fn -> Nx.indexed_put(t.(), Nx.tensor([[0, 3]]), Nx.tensor([1])) end},
        {"take", fn -> Nx.take(t.(), Nx.tensor([0, 3])) end},
        {"take (negative)", fn -> Nx.take(t.(), Nx.tensor([-1])) end},
        {"take_along_axis (axis 0)",
         fn -> Nx.take_along_axis(t.(), Nx.tensor([[3, 0], [0, 0]]), axis: 0) end},
        {"take_along_axis (axis 1)",
         fn -> Nx.take_along_axis(t.(), Nx.tensor([[0, 3], [0, 0]]), axis: 1) end}
      ]

      for {name, call} <- calls do
        message = assert_same_raise(ArgumentError, call)
        assert message =~ ~r/^index -?\d+ is out of bounds for axis \d in shape \{2, 2\}$/, name
      end

      assert assert_same_raise(ArgumentError, fn -> Nx.gather(t.(), Nx.tensor([[3, 0]])) end) ==
               "index 3 is out of bounds for axis 0 in shape {2, 2}"
    end
  end

  defmodule Emily.NxSuiteFindingsLinalgTest do
    # Complex linear algebra, under both config :emily, linalg: methods
    # (so not async: the setting is the VM's)
    use ExUnit.Case, async: false
    @moduletag :nx

    import Emily.Test.NxSuiteFindings

    @methods [:reference, :lapack]

    setup do
      Nx.default_backend(Emily.Backend)
      previous = Application.fetch_env(:emily, :linalg)

      on_exit(fn ->
        case previous do
          {:ok, method} -> Application.put_env(:emily, :linalg, method)
          :error -> Application.delete_env(:emily, :linalg)
        end
      end)
    end

    # Nx 0.7 has no Nx.LinAlg.BlockEigh
    defp nx07?, do: not Code.ensure_loaded?(Nx.LinAlg.BlockEigh)

    defp tol(:c64), do: 1.0e-5
    defp tol(:c128), do: 1.0e-12

    # batched matrix product x.y on Nx.BinaryBackend
    defp mm(x, y) do
      r = Nx.rank(x)
      batch = Enum.to_list(0..(r - 3)//1)
      on_binary(fn -> Nx.dot(binary(x), [r - 1], batch, binary(y), [r - 2], batch) end)
    end

    defp adjoint(x), do: on_binary(fn -> Nx.LinAlg.adjoint(binary(x)) end)

    defp eye(shape, type) do
      n = elem(shape, tuple_size(shape) - 1)
      on_binary(fn -> Nx.broadcast(Nx.eye(n, type: type), shape) end)
    end

    # a seeded random complex matrix (batch), real and imaginary parts in
    # [-1, 1), none of them zero
    defp random(shape, type) do
      values =
        for _ <- 1..Tuple.product(shape),
            do: Complex.new(:rand.uniform() * 2 - 1, :rand.uniform() * 2 - 1)

      m = Nx.tensor(values, type: type, backend: Nx.BinaryBackend) |> Nx.reshape(shape)
      assert on_binary(fn -> Nx.all(Nx.not_equal(Nx.imag(m), 0)) |> Nx.to_number() end) == 1
      m
    end

    test "complex lu and solve (lu's update is l*u, not l*conj(u))" do
      c = &Complex.new/2

      a =
        Nx.tensor([[c.(1, 1), 2, 3], [4, c.(0, 5), 6], [7, 8, c.(9, -1)]],
          type: :c64,
          backend: Nx.BinaryBackend
        )

      {pb, lb, ub} = on_binary(fn -> Nx.LinAlg.lu(a) end)
      u12 = ub[1][2] |> Nx.to_number()
      assert_in_delta Complex.real(u12), 0.857, 1.0e-3
      assert_in_delta Complex.imag(u12), 0.571, 1.0e-3

      sa =
        Nx.tensor([[1, 0, c.(0, 1)], [c.(0, -1), 0, c.(0, 1)], [1, 1, 1]],
          type: :c64,
          backend: Nx.BinaryBackend
        )

      sb = Nx.tensor([c.(3, 1), 4, c.(2, -2)], type: :c64, backend: Nx.BinaryBackend)
      xb = on_binary(fn -> Nx.LinAlg.solve(sa, sb) end)
      expected = Nx.tensor([c.(0, 1), 2, c.(0, -3)], type: :c64, backend: Nx.BinaryBackend)
      assert_close(xb, expected, "Nx.BinaryBackend's solve", 1.0e-6)

      for method <- @methods do
        Application.put_env(:emily, :linalg, method)
        {p, l, u} = Nx.LinAlg.lu(emily(a))

        # under :reference Nx's own lu, bit for bit; LAPACK pivots on
        # |re| + |im| where Nx pivots on |z|, which pick the same rows here
        for {e, b, name} <- [{p, pb, "p"}, {l, lb, "l"}, {u, ub, "u"}] do
          if method == :reference,
            do: assert_same_bits(e, b, "lu's #{name} (#{method})"),
            else: assert_close(e, b, "lu's #{name} (#{method})", 1.0e-6)
        end

        u12 = u[1][2] |> Nx.to_number()
        assert_in_delta Complex.imag(u12), 0.571, 1.0e-3

        x = Nx.LinAlg.solve(emily(sa), emily(sb))
        assert_emily(x)
        assert_close(x, xb, "solve (#{method})", 1.0e-6)
        assert_close(x, expected, "solve (#{method})", 1.0e-6)
      end
    end

    test "complex lu, solve, determinant, triangular_solve, qr, eigh and cholesky on random matrices" do
      :rand.seed(:exsss, {2024, 7, 13})
      shapes = [{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {3, 4, 4}]

      for type <- [:c64, :c128], shape <- shapes do
        a = random(shape, type)
        k = tuple_size(shape)
        n = elem(shape, k - 1)
        what = "#{inspect(type)} #{inspect(shape)}"
        tol = tol(type)
        id = eye(shape, type)
        # right-hand sides: n x 2 (left_side: true) and 2 x n
        b = random(put_elem(shape, k - 1, 2), type)
        bt = random(put_elem(shape, k - 2, 2), type)
        # triangular matrices with a diagonal away from zero
        shifted = on_binary(fn -> Nx.add(a, Nx.multiply(id, 2)) end)
        hermitian = on_binary(fn -> Nx.divide(Nx.add(a, Nx.LinAlg.adjoint(a)), 2) end)
        hpd = on_binary(fn -> Nx.add(mm(adjoint(a), a), Nx.multiply(id, n)) end)

        # results of the loaded Nx's Nx.BinaryBackend (Nx 0.7's solve and qr
        # raise on 1x1 matrices themselves: then only the defining
        # properties are checked)
        lu_b = on_binary(fn -> Nx.LinAlg.lu(a) end)
        det_b = on_binary(fn -> Nx.LinAlg.determinant(a) end)
        {w_b, v_b} = on_binary(fn -> Nx.LinAlg.eigh(hermitian) end)
        chol_b = on_binary(fn -> Nx.LinAlg.cholesky(hpd) end)

        {solve_b, qr_b} =
          if nx07?() and n == 1 do
            assert_raise ArgumentError, fn -> on_binary(fn -> Nx.LinAlg.solve(a, b) end) end
            assert_raise ArgumentError, fn -> on_binary(fn -> Nx.LinAlg.qr(a) end) end
            {nil, nil}
          else
            {on_binary(fn -> Nx.LinAlg.solve(a, b) end), on_binary(fn -> Nx.LinAlg.qr(a) end)}
          end

        for method <- @methods do
          Application.put_env(:emily, :linalg, method)
          what = "#{what} (#{method})"

          # lu: p.l.u = a; under :reference Nx's own factors, bit for bit
          {p, l, u} = lu = Nx.LinAlg.lu(emily(a))
          assert_close(mm(p, mm(l, u)), a, "p.l.u = a, #{what}", tol)

          if method == :reference do
            for {e, r, name} <- Enum.zip([Tuple.to_list(lu), Tuple.to_list(lu_b), ~w(p l u)]),
                do: assert_same_bits(e, r, "lu's #{name}, #{what}")
          end

          # solve: a.x = b, and Nx.BinaryBackend's x
          x = Nx.LinAlg.solve(emily(a), emily(b))
          assert_emily(x)
          assert_close(mm(a, x), b, "a.x = b, #{what}", tol)
          if solve_b, do: assert_close(x, solve_b, "solve, #{what}", tol)

          assert_close(Nx.LinAlg.determinant(emily(a)), det_b, "determinant, #{what}", tol)

          for lower <- [true, false],
              left_side <- [true, false],
              transform_a <- [:none, :transpose] do
            opts = [lower: lower, left_side: left_side, transform_a: transform_a]
            t = on_binary(fn -> if lower, do: Nx.tril(shifted), else: Nx.triu(shifted) end)
            rhs = if left_side, do: b, else: bt

            assert_close(
              Nx.LinAlg.triangular_solve(emily(t), emily(rhs), opts),
              on_binary(fn -> Nx.LinAlg.triangular_solve(t, rhs, opts) end),
              "triangular_solve #{inspect(opts)}, #{what}",
              tol
            )
          end

          # qr: q.r = a, q unitary; under :lapack r is exactly upper
          # triangular, under :reference Nx's Householder reflections leave
          # rounding noise below the diagonal (Nx.BinaryBackend's too) and
          # q and r are Nx.BinaryBackend's
          {q, r} = Nx.LinAlg.qr(emily(a))
          assert_close(mm(q, r), a, "q.r = a, #{what}", tol)
          assert_close(mm(adjoint(q), q), id, "qᴴq = 1, #{what}", tol)

          case {method, qr_b} do
            {:lapack, _} ->
              assert_close(r, on_binary(fn -> Nx.triu(binary(r)) end), "r upper, #{what}", 0.0)

            {:reference, {q_b, r_b}} ->
              assert_close(q, q_b, "qr's q, #{what}", tol)
              assert_close(r, r_b, "qr's r, #{what}", tol)

            {:reference, nil} ->
              :ok
          end

          # eigh: under :reference Nx's own algorithm, eigenvalues and
          # eigenvectors Nx.BinaryBackend's; under :lapack a.v = v.diag(w),
          # v unitary, sum(w) = trace(a), sum(w²) = |a|² (Frobenius) to
          # working precision, and the eigenvalues Nx.BinaryBackend's to
          # the accuracy of Nx's own algorithm
          {w, v} = Nx.LinAlg.eigh(emily(hermitian))
          assert_emily(w)

          if method == :reference do
            assert_close(w, w_b, "eigh's eigenvalues, #{what}", tol, type?: false)
            assert_close(v, v_b, "eigh's eigenvectors, #{what}", tol)
          else
            wv = on_binary(fn -> Nx.multiply(binary(v), Nx.new_axis(binary(w), -2)) end)
            assert_close(mm(hermitian, v), wv, "a.v = v.diag(w), #{what}", tol)
            assert_close(mm(adjoint(v), v), id, "vᴴv = 1, #{what}", tol)

            {sum_w, sum_w2, trace, frob2} =
              on_binary(fn ->
                wr = Nx.real(binary(w))
                diag = Nx.real(Nx.multiply(hermitian, id)) |> Nx.sum(axes: [-2])
                h2 = Nx.abs(hermitian) |> Nx.multiply(Nx.abs(hermitian))

                {Nx.sum(wr, axes: [-1]), Nx.sum(Nx.multiply(wr, wr), axes: [-1]),
                 Nx.sum(diag, axes: [-1]), Nx.sum(h2, axes: [-2, -1])}
              end)

            assert_close(sum_w, trace, "sum(w) = trace(a), #{what}", tol)
            assert_close(sum_w2, frob2, "sum(w²) = |a|², #{what}", tol)

            # Nx's own eigh is only as accurate as its stopping criterion
            # (eps: 1.0e-4): Nx 0.13's Jacobi stops at an off-diagonal norm
            # of eps² times the matrix's (errors up to 6e-10 here). Nx 0.7's
            # complex eigh is not an eigendecomposition at all on some of
            # these matrices (on the 3x3 c64 one, a residual |a.v - v.diag(w)|
            # of 0.27 and eigenvalues 0.04 off), so there the properties above
            # are the check.
            unless nx07?() do
              sorted = fn x -> on_binary(fn -> Nx.sort(Nx.real(binary(x)), axis: -1) end) end
              w_tol = max(tol, 1.0e-8)
              assert_close(sorted.(w), sorted.(w_b), "eigh's eigenvalues, #{what}", w_tol)
            end
          end

          # cholesky: Nx.BinaryBackend's l, and l.lᴴ = a (to Nx's eps 1e-10,
          # which Nx's algorithm adds to each divisor)
          chol = Nx.LinAlg.cholesky(emily(hpd))
          assert_close(chol, chol_b, "cholesky, #{what}", tol)
          assert_close(mm(chol, adjoint(chol)), hpd, "l.lᴴ = a, #{what}", max(tol, 1.0e-9))
        end
      end
    end

    test "complex svd raises on Emily as on Nx.BinaryBackend" do
      :rand.seed(:exsss, {1, 2, 3})
      a = random({3, 3}, :c64)

      for method <- @methods do
        Application.put_env(:emily, :linalg, method)
        assert_same_raise(ArgumentError, fn -> Nx.LinAlg.svd(Nx.backend_copy(a)) end)
      end
    end
  end
end

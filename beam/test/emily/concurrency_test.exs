defmodule Emily.ConcurrencyTest do
  # 8 processes run mixed ops at once for a while, each on its own
  # Emily.Stream, sharing one "model" tensor, and check every result
  # against values computed in Elixir.
  use ExUnit.Case, async: false
  alias Emily.Native

  @seconds 3
  @processes 8

  defp tmpl(type, shape), do: %{type: type, shape: shape}

  defp f64(values, shape), do: Native.from_binary!(:cpu, {:f, 64}, shape, pack(values))
  defp pack(values), do: for(v <- values, into: <<>>, do: <<v::float-64-little>>)
  defp unpack(ref), do: for(<<v::float-64-little <- Native.to_binary!(ref)>>, do: v)

  defp run!(op, type, shape, args, stream) do
    case Native.dispatch(op, tmpl(type, shape), args, nil, stream, 0) do
      {:error, message} -> flunk("#{op}: #{message}")
      ref -> ref
    end
  end

  # One round: random data through element-wise ops, a reduction, shape
  # ops and a conversion; every result is checked.
  defp round(shared, shared_values, stream, seed) do
    :rand.seed(:exsss, {seed, seed * 7 + 1, seed * 13 + 2})
    n = 1 + :rand.uniform(2000)
    rows = 4
    cols = div(n + rows - 1, rows)
    n = rows * cols
    x = for _ <- 1..n, do: :rand.uniform(100) - 50.0
    t = f64(x, {rows, cols})

    sum = run!(:add, {:f, 64}, {rows, cols}, [t, t], stream)
    assert unpack(sum) == Enum.map(x, &(&1 + &1))

    prod = run!(:multiply, {:f, 64}, {rows, cols}, [sum, t], stream)
    assert unpack(prod) == Enum.map(x, &(&1 * 2 * &1))

    # the shared model tensor: {4, 1} broadcast against every row
    biased = run!(:add, {:f, 64}, {rows, cols}, [t, shared], stream)

    expected =
      x
      |> Enum.chunk_every(cols)
      |> Enum.zip(shared_values)
      |> Enum.flat_map(fn {row, b} -> Enum.map(row, &(&1 + b)) end)

    assert unpack(biased) == expected

    total = run!(:sum, {:f, 64}, {}, [t, [axes: nil, keep_axes: false]], stream)
    assert unpack(total) == [Enum.sum(x)]

    tr = run!(:transpose, {:f, 64}, {cols, rows}, [t, [1, 0]], stream)
    flat = run!(:reshape, {:f, 64}, {n}, [tr], stream)

    assert unpack(flat) ==
             x |> Enum.chunk_every(cols) |> Enum.zip() |> Enum.flat_map(&Tuple.to_list/1)

    ints = run!(:as_type, {:s, 32}, {rows, cols}, [t], stream)
    assert for(<<v::signed-32-little <- Native.to_binary!(ints)>>, do: v) == Enum.map(x, &trunc/1)

    gt = run!(:greater, {:u, 8}, {rows, cols}, [t, shared], stream)

    expected_gt =
      x
      |> Enum.chunk_every(cols)
      |> Enum.zip(shared_values)
      |> Enum.flat_map(fn {row, b} -> Enum.map(row, &if(&1 > b, do: 1, else: 0)) end)

    assert :binary.bin_to_list(Native.to_binary!(gt)) == expected_gt

    Enum.each([t, sum, prod, biased, total, tr, flat, ints, gt], &Native.deallocate/1)
  end

  test "#{@processes} processes running mixed ops concurrently" do
    shared_values = [0.5, -1.5, 2.0, 10.0]
    shared = f64(shared_values, {4, 1})
    deadline = System.monotonic_time(:millisecond) + @seconds * 1000

    tasks =
      for p <- 1..@processes do
        Task.async(fn ->
          stream = Native.stream_new(:cpu)

          Stream.iterate(p * 100_000, &(&1 + 1))
          |> Enum.reduce_while(0, fn seed, rounds ->
            round(shared, shared_values, stream, seed)

            if System.monotonic_time(:millisecond) < deadline,
              do: {:cont, rounds + 1},
              else: {:halt, rounds + 1}
          end)
        end)
      end

    rounds = Enum.map(tasks, &Task.await(&1, (@seconds + 60) * 1000))
    assert Enum.all?(rounds, &(&1 > 0))

    IO.puts(
      "\nconcurrency: #{Enum.sum(rounds)} rounds in #{@seconds} s over #{@processes} processes"
    )
  end

  test "tensors are freed when collected; the corpus path leaks nothing" do
    # every process collected first: a tensor still referenced from some
    # other process's garbage (an earlier test's) would otherwise be freed
    # in the middle of this test and throw the counts off
    for pid <- Process.list(), do: :erlang.garbage_collect(pid)
    Process.sleep(50)
    {base, _} = Native.live_tensors()

    Task.await(
      Task.async(fn ->
        for _ <- 1..1000, do: f64([1.0, 2.0], {2})
        :ok
      end)
    )

    :erlang.garbage_collect()
    Process.sleep(50)
    {after_gc, _} = Native.live_tensors()
    assert after_gc <= base

    # a zero-copy binary keeps its bytes alive after deallocation, until
    # the binary itself is collected (here: when the task exits)
    Task.await(
      Task.async(fn ->
        a = f64([1.0, 2.0], {2})
        bin = Native.to_binary!(a)
        Native.deallocate(a)
        assert byte_size(bin) == 16
        {with_binary, _} = Native.live_tensors()
        assert with_binary == base + 1
      end)
    )

    {after_dealloc, _} = Native.live_tensors()
    assert after_dealloc <= base
  end
end

defmodule Emily.PointerExportTest do
  # to_pointer/from_pointer against deallocate, from several processes at
  # once: an address in the export table must name live memory (a fuzz
  # campaign found from_pointer copying freed memory), and the table must
  # hold one entry per exported tensor, not one per call. Sync: the
  # table's total count is global.
  use ExUnit.Case, async: false
  import Bitwise
  alias Emily.Native

  @seconds 3
  @workers 8
  @elements 64

  # a tensor whose every u32 element is `tag` (tags are non-zero and
  # unique, so bytes read back say which tensor they came from)
  defp tagged(tag),
    do:
      Native.from_binary!(:cpu, {:u, 32}, {@elements}, :binary.copy(<<tag::32-little>>, @elements))

  defp new_tag, do: rem(System.unique_integer([:positive]), 0xFFFF_FFFF) + 1

  # {:ok, tag} for bytes that are one tagged tensor's; :garbage otherwise
  # (what freed memory holds: the allocator's pointers, other data)
  defp read_back(addr) do
    case Native.from_pointer(:cpu, addr, {:u, 32}, {@elements}) do
      {:error, message} ->
        assert message =~ "not handed out", message
        :error

      ref ->
        <<first::32-little, _::binary>> = bin = Native.to_binary!(ref)

        if first != 0 and bin == :binary.copy(<<first::32-little>>, @elements),
          do: {:ok, first},
          else: {:garbage, bin}
    end
  end

  # One round: a fresh tensor that one process exports over and over
  # until it is gone, while another deallocates it and a third reads the
  # first address back the moment it is handed out. Afterwards the tensor
  # is gone, so reading its address again must fail (or find another
  # tensor that was exported there since).
  defp race_round(exports) do
    tag = new_tag()
    t = tagged(tag)
    parent = self()

    reader =
      spawn_link(fn ->
        receive do
          {:addr, addr} -> send(parent, {:read, addr, read_back(addr)})
          :none -> send(parent, :no_read)
        end
      end)

    exporter =
      spawn_link(fn ->
        receive do: (:go -> :ok)
        send(parent, {:exported, export_until_gone(t, reader, nil)})
      end)

    freer =
      spawn_link(fn ->
        receive do: (:go -> :ok)
        # a moment later than the exporter, some of the time
        for _ <- 1..:rand.uniform(40), do: :erlang.phash2(make_ref())
        send(parent, {:freed, Native.deallocate(t)})
      end)

    send(exporter, :go)
    send(freer, :go)
    assert_receive {:freed, :ok}, 5000
    assert_receive {:exported, addr}, 5000

    reads =
      receive do
        {:read, read_addr, r} -> [{read_addr, r}]
        :no_read -> []
      after
        5000 -> flunk("the reader did not answer")
      end

    # the deallocate and every to_pointer are over: no entry may name the
    # freed bytes (the campaign's bug left one whenever a to_pointer
    # recorded its address after the deallocate had cleaned up)
    assert Native.test_export_count(t) == 0, "a deallocated tensor still has an export entry"

    if addr do
      :ets.insert(exports, {addr, tag})
      # the deallocate is over: the address names no tensor of this round
      [{addr, read_back(addr)} | reads]
    else
      reads
    end
  end

  # to_pointer until the tensor is deallocated; the address (nil if the
  # first call already failed), the first one sent to the reader
  defp export_until_gone(t, reader, addr) do
    case Native.to_pointer(t) do
      {a, bytes} when is_integer(a) ->
        assert bytes == 4 * @elements
        assert addr == nil or addr == a
        if addr == nil, do: send(reader, {:addr, a})
        export_until_gone(t, reader, a)

      {:error, message} ->
        assert message =~ "deallocated", message
        if addr == nil, do: send(reader, :none)
        addr
    end
  end

  test "racing to_pointer, deallocate and from_pointer never reads freed memory" do
    # {address, tag} of every export, to check reads of reused addresses
    exports = :ets.new(:exports, [:bag, :public])
    deadline = System.monotonic_time(:millisecond) + @seconds * 1000

    # traffic on the export table besides the rounds: copies of a large
    # exported tensor, so that the rounds' calls meet a busy table (the
    # campaign's use-after-free needed a to_pointer to wait for it)
    big = Native.from_binary!(:cpu, {:u, 8}, {1 <<< 20}, :binary.copy(<<1>>, 1 <<< 20))
    {big_addr, _} = Native.to_pointer(big)

    copiers =
      for _ <- 1..2 do
        Task.async(fn ->
          Stream.repeatedly(fn -> Native.from_pointer(:cpu, big_addr, {:u, 8}, {1 <<< 20}) end)
          |> Stream.take_while(fn _ -> System.monotonic_time(:millisecond) < deadline end)
          |> Enum.each(&assert(is_reference(&1)))
        end)
      end

    workers =
      for _ <- 1..@workers do
        Task.async(fn ->
          Stream.repeatedly(fn -> race_round(exports) end)
          |> Stream.take_while(fn _ -> System.monotonic_time(:millisecond) < deadline end)
          |> Enum.flat_map(& &1)
        end)
      end

    reads = Enum.flat_map(workers, &Task.await(&1, (@seconds + 30) * 1000))
    Enum.each(copiers, &Task.await(&1, 30_000))
    # (and `big` lives until here: its address is valid while it does)
    assert Native.deallocate(big) == :ok

    for {addr, result} <- reads do
      case result do
        :error ->
          :ok

        {:ok, tag} ->
          # bytes of a tensor exported at that address (its own, or a
          # later one that the allocator put there)
          assert {addr, tag} in :ets.lookup(exports, addr),
                 "from_pointer(#{addr}) read tensor #{tag}, never exported there"

        {:garbage, bin} ->
          flunk("from_pointer(#{addr}) read freed memory: #{inspect(bin, limit: 8)}")
      end
    end

    ok = Enum.count(reads, &match?({_, {:ok, _}}, &1))
    IO.puts("\npointer race: #{length(reads)} reads (#{ok} of live tensors) in #{@seconds} s")
  end

  test "repeated exports of one tensor share one entry, which freeing removes" do
    t = tagged(7)
    {addr, 256} = Native.to_pointer(t)

    for _ <- 1..10_000, do: assert(Native.to_pointer(t) == {addr, 256})

    assert Native.test_export_count(t) == 1

    assert <<7::32-little, _::binary>> =
             Native.to_binary!(Native.from_pointer(:cpu, addr, {:u, 32}, {64}))

    assert Native.deallocate(t) == :ok
    assert Native.test_export_count(t) == 0
    assert {:error, _} = Native.from_pointer(:cpu, addr, {:u, 32}, {64})
  end

  test "entries go when their tensors are collected" do
    before = Native.test_export_count(nil)

    {pid, ref} =
      spawn_monitor(fn ->
        ts = for i <- 1..1000, do: tagged(i)
        for t <- ts, do: {_, _} = Native.to_pointer(t)
        for t <- ts, _ <- 1..3, do: {_, _} = Native.to_pointer(t)
        counted = Native.test_export_count(nil)
        # (ts is used after the count, so that none was collected before it)
        exit({:counted, counted, length(ts)})
      end)

    assert_receive {:DOWN, ^ref, :process, ^pid, {:counted, during, 1000}}, 10_000
    assert during >= before + 1000 and during <= before + 1000 + 100, inspect({before, during})
    # the process is gone and its tensors with it (their destructors may
    # run a moment later)
    assert Enum.any?(1..100, fn _ ->
             Native.test_export_count(nil) <= before or (Process.sleep(20) && false)
           end)
  end

  test "many exported tensors: lookups stay correct as the table grows and shrinks" do
    n = 5000
    ts = for i <- 1..n, do: tagged(i)
    addrs = Enum.map(ts, fn t -> elem(Native.to_pointer(t), 0) end)
    assert Native.test_export_count(nil) >= n

    # live ones read back their own bytes; freed ones fail (nothing is
    # exported after the frees, so no address can name another tensor)
    check = fn live? ->
      for {addr, i} <- Enum.zip(addrs, 1..n) do
        result = Native.from_pointer(:cpu, addr, {:u, 32}, {@elements})

        if live?.(i),
          do: assert(<<^i::32-little, _::binary>> = Native.to_binary!(result)),
          else: assert({:error, _} = result)
      end
    end

    check.(fn _ -> true end)
    # every other one freed, then all but one in ten (the table shrinks)
    for {t, i} <- Enum.zip(ts, 1..n), rem(i, 2) == 0, do: Native.deallocate(t)
    check.(&(rem(&1, 2) == 1))
    for {t, i} <- Enum.zip(ts, 1..n), rem(i, 10) != 1, do: Native.deallocate(t)
    check.(&(rem(&1, 10) == 1))

    for {t, i} <- Enum.zip(ts, 1..n) do
      assert Native.test_export_count(t) == if(rem(i, 10) == 1, do: 1, else: 0)
      Native.deallocate(t)
      assert Native.test_export_count(t) == 0
    end
  end
end

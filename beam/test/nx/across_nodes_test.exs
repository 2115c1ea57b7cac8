if Code.ensure_loaded?(Nx) do
  defmodule Emily.Backend.AcrossNodesTest do
    # Emily.Backend tensors outside the VM that made them: through
    # term_to_binary/binary_to_term (here) and between two nodes (below).
    # A CPU tensor contiguous in memory carries its bytes; every callback,
    # to_binary, inspect, backend_copy/transfer/deallocate work on it where
    # its engine tensor does not exist. Others raise saying why.
    use ExUnit.Case, async: false
    @moduletag :nx

    import Emily.Test.NativeData, only: [wait_gone: 2]
    alias Emily.Native

    # a tensor as another VM sees it: term_to_binary'd in a process that
    # exits (its engine tensor goes with it), then binary_to_term'd here
    defp from_elsewhere(fun) do
      external = Task.async(fn -> :erlang.term_to_binary(fun.()) end) |> Task.await()
      wait_gone(external, 100)
    end

    defp emily(list, opts \\ []), do: Nx.tensor(list, [backend: Emily.Backend] ++ opts)

    defp zero_size_shapes? do
      Nx.iota({0}, backend: Nx.BinaryBackend)
      true
    rescue
      ArgumentError -> false
    end

    test "a CPU tensor round-trips through term_to_binary and works in every callback" do
      original = emily([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], type: :f32)
      t = from_elsewhere(fn -> emily([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], type: :f32) end)

      assert %Emily.Backend{bytes: bytes} = t.data
      assert bytes == Nx.to_binary(original)
      assert Nx.to_binary(t) == Nx.to_binary(original)
      assert Nx.to_binary(t, limit: 2) == Nx.to_binary(original, limit: 2)
      assert Nx.to_list(t) == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]

      # element-wise, reductions, shape, dot, multi-output, with local tensors
      assert Nx.to_list(Nx.multiply(t, original)) == Nx.to_list(Nx.multiply(original, original))
      assert Nx.to_list(Nx.sum(t, axes: [1])) == [6.0, 15.0]
      assert Nx.to_list(Nx.transpose(t)) == Nx.to_list(Nx.transpose(original))
      assert Nx.to_list(Nx.dot(t, Nx.transpose(t))) == [[14.0, 32.0], [32.0, 77.0]]
      {values, indices} = Nx.top_k(Nx.flatten(t), k: 2)
      assert Nx.to_list(values) == [6.0, 5.0] and Nx.to_list(indices) == [5, 4]
      assert Nx.to_number(Nx.reduce(t, 0, fn a, b -> Nx.add(a, b) end)) == 21.0

      # inspect, device, moves
      assert inspect(t) == inspect(original)
      assert Emily.Backend.device(t) == :cpu
      copy = Nx.backend_copy(t, Emily.Backend)
      assert Native.check_local(copy.data.ref) == :ok
      assert Nx.to_binary(copy) == bytes
      assert Nx.to_binary(Nx.backend_copy(t, Nx.BinaryBackend)) == bytes
      local = Nx.backend_transfer(t, {Emily.Backend, device: :cpu})
      assert Native.check_local(local.data.ref) == :ok
      assert Nx.to_list(local) == Nx.to_list(original)
      moved = Nx.backend_transfer(t, Nx.BinaryBackend)
      assert %Nx.BinaryBackend{} = moved.data
      assert Nx.to_binary(moved) == bytes

      # deallocate: nothing of it here but the bytes, which go with the struct
      assert Nx.backend_deallocate(t) == :ok
      assert Nx.to_list(Nx.add(t, 1)) == [[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]]

      # (Emily.Backend's: Nx 0.7 has no Nx.to_pointer)
      assert_raise ArgumentError, ~r/came from another node/, fn ->
        Emily.Backend.to_pointer(t, mode: :local)
      end
    end

    test "every type, and empty and scalar tensors" do
      for type <- [:u8, :s16, :s64, :f16, :bf16, :f64, :c64] do
        original = Nx.iota({2, 3}, type: type, backend: Emily.Backend)
        t = from_elsewhere(fn -> Nx.iota({2, 3}, type: type, backend: Emily.Backend) end)
        assert Nx.to_binary(t) == Nx.to_binary(original), "#{type}"
        assert Nx.to_binary(Nx.negate(t)) == Nx.to_binary(Nx.negate(original)), "#{type}"
      end

      # zero-size dimensions (Nx 0.7 has none)
      if zero_size_shapes?() do
        e = from_elsewhere(fn -> Nx.iota({0, 3}, backend: Emily.Backend) end)
        assert e.data.bytes == "" and Nx.to_binary(e) == ""
        assert Nx.shape(Nx.add(e, 1)) == {0, 3}
      end

      s = from_elsewhere(fn -> emily(7.5) end)
      assert Nx.to_number(Nx.multiply(s, 2)) == 15.0
    end

    test "a tensor without bytes (a non-contiguous view) raises saying why and how to copy it" do
      view = Nx.transpose(Nx.iota({2, 3}, backend: Emily.Backend))
      assert view.data.bytes == nil
      t = from_elsewhere(fn -> Nx.transpose(Nx.iota({2, 3}, backend: Emily.Backend)) end)

      message = ~r/not an Emily tensor of this node.*non-contiguous view.*Nx.backend_copy/
      assert_raise ArgumentError, message, fn -> Nx.add(t, 1) end
      assert_raise ArgumentError, message, fn -> Nx.to_binary(t) end
      assert_raise ArgumentError, message, fn -> Nx.backend_copy(t, Nx.BinaryBackend) end
      assert_raise ArgumentError, message, fn -> Emily.Backend.device(t) end
      # inspect says what it is rather than raising (crash reports)
      assert inspect(t) =~ "Emily.Backend<not on this node>"

      # the fixes the message gives: a contiguous copy crosses
      for copy <- [Nx.backend_copy(view), Nx.backend_copy(view, Nx.BinaryBackend)] do
        back = :erlang.binary_to_term(:erlang.term_to_binary(copy))
        assert Nx.to_list(Nx.add(back, 1)) == [[1, 4], [2, 5], [3, 6]]
      end
    end
  end

  defmodule Emily.Backend.AcrossNodesPeerTest do
    # Two nodes, Emily.Backend the default on both: tensors through :erpc
    # and Nx.Serving's distributed mode (Nx.Serving.batched_run({:distributed,
    # name}, batch)), which sends the batch in Node.spawn_monitor's
    # arguments and the result in an exit reason.
    use ExUnit.Case, async: false
    @moduletag :nx
    @moduletag :distributed

    alias Emily.Test.PeerNx

    setup_all do
      {peer, node} = Emily.Test.Peer.start!()
      on_exit(fn -> :peer.stop(peer) end)
      :ok = :erpc.call(node, PeerNx, :setup, [])
      {:ok, _} = Application.ensure_all_started(:nx)
      %{node: node}
    end

    defp local?(t), do: Emily.Native.check_local(t.data.ref) == :ok

    test "a tensor sent to the peer is used there; its result is used here", %{node: node} do
      t = Nx.tensor([[1.0, 2.0], [3.0, 4.0]], backend: Emily.Backend)
      assert :erpc.call(node, Nx, :to_binary, [t]) == Nx.to_binary(t)
      assert :erpc.call(node, Nx, :to_list, [Nx.sum(t, axes: [0])]) == [4.0, 6.0]

      r = :erpc.call(node, Nx, :multiply, [t, 2])
      assert %Emily.Backend{} = r.data
      refute local?(r)
      assert Nx.to_list(r) == [[2.0, 4.0], [6.0, 8.0]]
      assert Nx.to_list(Nx.add(r, t)) == [[3.0, 6.0], [9.0, 12.0]]
      assert inspect(r) == inspect(Nx.multiply(t, 2))
    end

    test "a view raises there with the fix; its copy crosses", %{node: node} do
      view = Nx.transpose(Nx.iota({2, 3}, backend: Emily.Backend))

      assert {:raised, %ArgumentError{message: message}} =
               :erpc.call(node, PeerNx, :try_apply, [Nx, :add, [view, 1]])

      assert message =~ "add: argument 1: the reference is not an Emily tensor of this node"
      assert message =~ "Nx.backend_copy(t, Nx.BinaryBackend)"

      r = :erpc.call(node, Nx, :add, [Nx.backend_copy(view), 1])
      assert Nx.to_list(r) == [[1, 4], [2, 5], [3, 6]]
    end

    test "Nx.Serving.batched_run({:distributed, name}, batch) with Emily on both nodes",
         %{node: node} do
      name = :"emily_serving_#{System.unique_integer([:positive])}"
      {:ok, serving} = :erpc.call(node, PeerNx, :start_serving, [name])
      assert node(serving) == node
      wait_member(name, node, 200)

      batch =
        Nx.Batch.stack([
          Nx.tensor([1.0, 2.0, 3.0], backend: Emily.Backend),
          Nx.tensor([4.0, 5.0, 6.0], backend: Emily.Backend)
        ])

      result = Nx.Serving.batched_run({:distributed, name}, batch)
      assert %Emily.Backend{} = result.data
      # computed on the peer
      refute local?(result)
      assert Nx.to_list(result) == [[2.0, 4.0, 6.0], [8.0, 10.0, 12.0]]

      # more requests, from several processes at once, up to the batch size
      tasks =
        for i <- 1..6 do
          Task.async(fn ->
            batch = Nx.Batch.concatenate([Nx.iota({i}, type: :f32, backend: Emily.Backend)])
            {i, Nx.Serving.batched_run({:distributed, name}, batch)}
          end)
        end

      for {i, r} <- Task.await_many(tasks, 30_000) do
        assert Nx.to_list(r) == Enum.map(0..(i - 1), &(&1 * 2.0))
      end
    end

    # :pg tells this node about the peer's serving asynchronously (Nx 0.7
    # groups every serving under Nx.Serving, later Nx under its name)
    defp wait_member(name, node, tries) do
      members = :pg.get_members(Nx.Serving.PG, name) ++ :pg.get_members(Nx.Serving.PG, Nx.Serving)

      cond do
        Enum.any?(members, &(node(&1) == node)) ->
          :ok

        tries > 0 ->
          Process.sleep(10)
          wait_member(name, node, tries - 1)

        true ->
          flunk("the peer's serving never joined Nx.Serving.PG")
      end
    end
  end
end

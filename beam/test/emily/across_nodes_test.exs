defmodule Emily.AcrossNodesTest do
  # Emily tensors outside the VM that made them. Emily.Backend's data is
  # %Emily.Backend{ref, bytes}: bytes aliases a contiguous CPU tensor's
  # bytes, so that a struct whose ref resolves to nothing here (it came
  # from another node, or through binary_to_term after its tensor was
  # freed) is read from them; without bytes the NIF says why and what to
  # do. Through Emily.Native, so it runs without Nx too (the structs are
  # plain maps here). Not async: the leak check counts live tensors.
  use ExUnit.Case, async: false
  import Emily.Test.NativeData
  alias Emily.Native

  # data as it arrives from a VM where its tensor lived: the same bytes,
  # a reference that is no tensor here
  defp arrived(data), do: %{data | ref: make_ref()}

  describe "the data of results" do
    test "contiguous CPU tensors carry a binary over their bytes; views carry none" do
      a = f32([1, 2, 3])
      assert %{__struct__: Emily.Backend, ref: ref, bytes: bytes} = a
      assert is_reference(ref) and bytes == Native.to_binary!(ref)

      sum = dispatch(:add, tmpl({3}), [tensor(a, {3}), tensor(a, {3})])
      assert %{__struct__: Emily.Backend, bytes: bytes} = sum
      assert floats(bytes) == [2.0, 4.0, 6.0]
      assert local?(sum)

      m = f32(1..6, {2, 3})
      view = dispatch(:transpose, tmpl({3, 2}), [tensor(m, {2, 3}), [1, 0]])
      assert %{__struct__: Emily.Backend, bytes: nil} = view
      # a slice along the first axis is contiguous: it carries its own range
      rows = dispatch(:slice, tmpl({1, 3}), [tensor(m, {2, 3}), [1, 0], [1, 3], [1, 1]])
      assert floats(rows.bytes) == [4.0, 5.0, 6.0]

      assert %{bytes: ""} = f32([])

      # multi-output callbacks: a list of data
      assert [values, indices] =
               dispatch(:top_k, {tmpl({2}), tmpl({2}, {:s, 64})}, [tensor(a, {3}), [k: 2]])

      assert floats(values.bytes) == [3.0, 2.0]
      assert for(<<i::signed-64-little <- indices.bytes>>, do: i) == [2, 1]

      # mode 0 still returns bare references; other modes are errors
      assert is_reference(Native.dispatch(:add, tmpl({3}), [ref, ref], nil, nil, 0))
      assert {:error, msg} = Native.dispatch(:add, tmpl({3}), [ref, ref], nil, nil, 4)
      assert msg =~ "mode"
      assert {:error, msg} = Native.backend_data(make_ref())
      assert msg =~ "Emily tensor"
    end
  end

  describe "a reference that is no tensor of this VM" do
    test "is read from the bytes its struct carries, in any callback" do
      a = arrived(f32([1, 2, 3]))
      refute local?(a)
      r = dispatch(:multiply, tmpl({3}), [tensor(a, {3}), tensor(a, {3})])
      assert floats(r.bytes) == [1.0, 4.0, 9.0]
      assert local?(r)

      # mixed with local tensors, and as the struct's shape says
      b = f32([10, 20, 30])
      r = dispatch(:add, tmpl({3, 1}), [tensor(a, {3, 1}), tensor(b, {3, 1})])
      assert floats(r.bytes) == [11.0, 22.0, 33.0]
      r = dispatch(:sum, tmpl({}), [tensor(a, {3}), [axes: [0], keep_axes: false]])
      assert floats(r.bytes) == [6.0]

      # bytes that do not match the struct
      short = %{a | bytes: binary_part(a.bytes, 0, 8)}
      assert {:error, msg} = dispatch(:negate, tmpl({3}), [tensor(short, {3})])
      assert msg =~ "importing an Emily tensor from the bytes it carried"
    end

    test "term_to_binary after the tensor is gone: binary_to_term gives it back from its bytes" do
      # the tensor lives in a process that exits: its resource goes with it
      external =
        Task.async(fn ->
          a = f32([1.5, 2.5, 3.5])
          :erlang.term_to_binary(tensor(a, {3}))
        end)
        |> Task.await()

      t = wait_gone(external)
      assert floats(t.data.bytes) == [1.5, 2.5, 3.5]
      r = dispatch(:add, tmpl({3}), [t, t])
      assert floats(r.bytes) == [3.0, 5.0, 7.0]

      # while the tensor lives, binary_to_term gives back the tensor itself
      a = f32([4, 5])
      back = :erlang.binary_to_term(:erlang.term_to_binary(tensor(a, {2})))
      assert back.data.ref == a.ref and local?(back.data)
    end

    test "without bytes (a view, a GPU tensor) it is an error that says why and what to do" do
      m = f32(1..6, {2, 3})
      view = dispatch(:transpose, tmpl({3, 2}), [tensor(m, {2, 3}), [1, 0]])
      gone = arrived(view)
      assert {:error, msg} = dispatch(:negate, tmpl({3, 2}), [tensor(gone, {3, 2})])

      for part <- [
            "negate: argument 1: ",
            "not an Emily tensor of this node",
            "carries no bytes",
            "a GPU tensor or a non-contiguous view",
            "Nx.backend_copy(t, Nx.BinaryBackend)",
            "distributed_postprocessing"
          ] do
        assert msg =~ part
      end

      assert {:error, ^msg} = Native.check_local(gone.ref) |> prefix("negate: argument 1: ")
      # a bare reference keeps its short message
      assert {:error, bare} = dispatch(:negate, tmpl({3, 2}), [gone.ref])
      assert bare =~ "not an Emily tensor"
    end
  end

  describe "deallocation and memory" do
    test "deallocate frees the engine tensor's use; the bytes stay valid for the struct" do
      a = f32([1, 2, 3])
      assert Native.deallocate(a.ref) == :ok
      # a local tensor that was deallocated is not read from its bytes
      assert {:error, msg} = dispatch(:negate, tmpl({3}), [tensor(a, {3})])
      assert msg =~ "deallocated"
      :erlang.garbage_collect()
      assert floats(a.bytes) == [1.0, 2.0, 3.0]
    end

    test "results with bytes are freed when collected; the bytes keep only their buffer" do
      for pid <- Process.list(), do: :erlang.garbage_collect(pid)
      Process.sleep(50)
      {base, base_buffers} = Native.live_tensors()

      kept =
        Task.async(fn ->
          a = f32(1..64, {64})
          for _ <- 1..500, do: dispatch(:add, tmpl({64}), [tensor(a, {64}), tensor(a, {64})])
          r = dispatch(:multiply, tmpl({64}), [tensor(a, {64}), tensor(a, {64})])
          assert Native.deallocate(r.ref) == :ok
          r.bytes
        end)
        |> Task.await()

      # everything the task made is freed with it, but the bytes of the
      # deallocated result, which a binary taken from its struct keeps:
      # one tensor, one buffer
      :erlang.garbage_collect()
      assert Native.live_tensors() == {base + 1, base_buffers + 1}
      assert floats(kept) == Enum.map(1..64, &(&1 * &1 * 1.0))
    end
  end

  defp prefix({:error, msg}, p), do: {:error, p <> msg}
end

defmodule Emily.AcrossNodesPeerTest do
  # The same, between two nodes (a :peer started with this VM's code
  # paths): arguments and results of :erpc and plain messages.
  use ExUnit.Case, async: false
  import Emily.Test.NativeData
  alias Emily.Native
  @moduletag :distributed

  setup_all do
    {peer, node} = Emily.Test.Peer.start!()
    on_exit(fn -> :peer.stop(peer) end)
    %{node: node}
  end

  test "a tensor sent to another node is read there; the result comes back", %{node: node} do
    a = f32([1, 2, 3])
    args = [:multiply, tmpl({3}), [tensor(a, {3}), tensor(a, {3})], nil, nil, as_data()]

    # through :erpc (arguments and result cross the distribution)
    r = :erpc.call(node, Native, :dispatch, args)
    assert %{__struct__: Emily.Backend, bytes: bytes} = r
    assert floats(bytes) == [1.0, 4.0, 9.0]
    # the peer's result is no tensor here, and works here from its bytes
    refute local?(r)
    back = dispatch(:add, tmpl({3}), [tensor(r, {3}), tensor(a, {3})])
    assert floats(back.bytes) == [2.0, 6.0, 12.0]

    # and through plain messages to a process on the peer
    pid = Node.spawn_link(node, Emily.Test.Peer, :apply_loop, [])
    ref = make_ref()
    send(pid, {self(), ref, Native, :dispatch, args})
    assert_receive {^ref, %{__struct__: Emily.Backend, bytes: bytes}}, 10_000
    assert floats(bytes) == [1.0, 4.0, 9.0]
  end

  test "a tensor without bytes is an error there that says why", %{node: node} do
    m = f32(1..6, {2, 3})
    view = dispatch(:transpose, tmpl({3, 2}), [tensor(m, {2, 3}), [1, 0]])
    assert view.bytes == nil

    assert {:error, msg} =
             :erpc.call(node, Native, :dispatch, [
               :negate,
               tmpl({3, 2}),
               [tensor(view, {3, 2})],
               nil,
               nil,
               as_data()
             ])

    assert msg =~ "non-contiguous view" and msg =~ "Nx.backend_copy"
  end
end

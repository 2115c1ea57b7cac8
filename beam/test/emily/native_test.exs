defmodule Emily.NativeTest do
  # Bad input through Emily.Native: every case must come back as an error
  # (or a raise), never crash the VM.
  use ExUnit.Case, async: true
  import Bitwise
  alias Emily.Native

  defp f32(values) do
    bin = for v <- values, into: <<>>, do: <<v::float-32-little>>
    Native.from_binary!(:cpu, {:f, 32}, {length(values)}, bin)
  end

  defp s32(values, shape) do
    bin = for v <- values, into: <<>>, do: <<v::signed-32-little>>
    Native.from_binary!(:cpu, {:s, 32}, shape || {length(values)}, bin)
  end

  defp to_f32(ref) do
    for <<v::float-32-little <- Native.to_binary!(ref)>>, do: v
  end

  defp tmpl(type, shape), do: %{type: type, shape: shape}

  defp add(a, b, shape \\ {2}),
    do: Native.dispatch(:add, tmpl({:f, 32}, shape), [a, b], nil, nil, 0)

  defp assert_error(result, pattern) do
    assert {:error, message} = result
    assert is_binary(message)
    assert message =~ pattern, "#{inspect(message)} does not match #{inspect(pattern)}"
    message
  end

  describe "happy path" do
    test "dispatch, to_binary, tensor_info" do
      a = f32([1.0, 2.0])
      assert {{:f, 32}, {2}, :cpu} = Native.tensor_info(a)
      r = add(a, a)
      assert is_reference(r)
      assert to_f32(r) == [2.0, 4.0]
    end

    test "tensors as maps like %Nx.Tensor{} and Nx.BinaryBackend data" do
      a = f32([1.0, 2.0])

      t = %{
        __struct__: Nx.Tensor,
        data: %{__struct__: Emily.Backend, ref: a},
        type: {:f, 32},
        shape: {2}
      }

      bin = %{__struct__: Nx.BinaryBackend, state: <<3.0::float-32-little, 4.0::float-32-little>>}
      b = %{__struct__: Nx.Tensor, data: bin, type: {:f, 32}, shape: {2}}
      assert to_f32(add(t, b)) == [4.0, 6.0]
    end

    test "a struct whose shape differs from the data's with the same size is a reshape" do
      a = f32([1.0, 2.0, 3.0, 4.0])
      t = %{data: %{ref: a}, type: {:f, 32}, shape: {2, 2}}
      r = Native.dispatch(:negate, tmpl({:f, 32}, {2, 2}), [t], nil, nil, 0)
      assert {{:f, 32}, {2, 2}, :cpu} = Native.tensor_info(r)
    end

    test "tensors of other backends are reported for Elixir to move" do
      other = %{
        __struct__: Nx.Tensor,
        data: %{__struct__: EXLA.Backend, buffer: 1},
        type: {:f, 32},
        shape: {2}
      }

      assert {:error, :foreign_tensor} = add(f32([1.0, 2.0]), other)
    end

    test "multi-output templates return lists" do
      # a tuple template for a single-output callback is a template error
      a = f32([1.0, 2.0])

      assert_error(
        Native.dispatch(:add, {tmpl({:f, 32}, {2}), tmpl({:f, 32}, {2})}, [a, a], nil, nil, 0),
        ""
      )
    end

    test "zero-copy to_binary survives deallocation and collection of the tensor" do
      a = f32([1.0, 2.0, 3.0])
      bin = Native.to_binary!(a)
      assert Native.deallocate(a) == :ok
      :erlang.garbage_collect()
      assert bin == <<1.0::float-32-little, 2.0::float-32-little, 3.0::float-32-little>>
      assert Native.to_binary!(f32([1.0, 2.0, 3.0]), 2) == binary_part(bin, 0, 8)
    end

    test "to_binary of non-contiguous views copies" do
      a = s32([1, 2, 3, 4, 5, 6], {2, 3})
      t = Native.dispatch(:transpose, tmpl({:s, 32}, {3, 2}), [a, [1, 0]], nil, nil, 0)
      assert for(<<v::signed-32-little <- Native.to_binary!(t)>>, do: v) == [1, 4, 2, 5, 3, 6]
      assert byte_size(Native.to_binary!(t, 3)) == 12
      assert Native.to_binary!(t, 0) == <<>>
    end

    test "introspection" do
      assert :cpu in Native.devices()
      assert is_binary(Native.version())
      assert :add in Native.callbacks()
      assert {t, b} = Native.live_tensors()
      assert is_integer(t) and is_integer(b)
      assert Native.synchronize(:cpu) == :ok
      assert %{active: _, peak: _, cached: _} = Native.memory_stats(:cpu)
      t = f32([1.0, 2.0])
      assert {addr, 8} = Native.to_pointer(t)
      assert addr > 0
      assert to_f32(Native.from_pointer(:cpu, addr, {:f, 32}, {2})) == [1.0, 2.0]
      assert_error(Native.from_pointer(:cpu, addr + 4, {:f, 32}, {1}), "not handed out")
      assert_error(Native.from_pointer(:cpu, 12345, {:u, 8}, {1}), "not handed out")
      assert_error(Native.from_pointer(:cpu, -1, {:u, 8}, {1}), "address")
      assert_error(Native.from_pointer(:cpu, addr, {:f, 32}, {1 <<< 62, 8}), "2^63")
      assert_error(Native.from_pointer(:cpu, addr, {:f, 64}, {2}), "bytes asked for")
      Native.deallocate(t)
      assert_error(Native.from_pointer(:cpu, addr, {:f, 32}, {2}), "not handed out")
    end

    test "streams" do
      s = Native.stream_new(:cpu)
      assert Native.stream_device(s) == :cpu
      a = f32([1.0, 2.0])
      r = Native.dispatch(:add, tmpl({:f, 32}, {2}), [a, a], nil, s, 0)
      assert to_f32(r) == [2.0, 4.0]
      assert Native.stream_synchronize(s) == :ok
    end
  end

  describe "wrong terms" do
    test "callback names" do
      a = f32([1.0])
      assert_error(Native.dispatch(123, tmpl({:f, 32}, {1}), [a, a], nil, nil, 0), "callback name")

      assert_error(
        Native.dispatch(:no_such_op, tmpl({:f, 32}, {1}), [a], nil, nil, 0),
        "unknown callback"
      )

      assert_error(
        Native.dispatch(String.duplicate("x", 200), tmpl({:f, 32}, {1}), [], nil, nil, 0),
        ""
      )
    end

    test "templates" do
      a = f32([1.0, 2.0])
      assert_error(add(a, a, {-1}), "non-negative")
      assert_error(Native.dispatch(:add, tmpl({:f, 7}, {2}), [a, a], nil, nil, 0), "not supported")
      assert_error(Native.dispatch(:add, tmpl({:x, 32}, {2}), [a, a], nil, nil, 0), "not supported")
      assert_error(Native.dispatch(:add, tmpl(:f32, {2}), [a, a], nil, nil, 0), "type")
      assert_error(Native.dispatch(:add, tmpl({:f, 32}, [2]), [a, a], nil, nil, 0), "shape")
      assert_error(Native.dispatch(:add, 42, [a, a], nil, nil, 0), "template")
      assert_error(Native.dispatch(:add, %{type: {:f, 32}}, [a, a], nil, nil, 0), "template")
      assert_error(Native.dispatch(:add, {}, [a, a], nil, nil, 0), "outputs")
      five = List.to_tuple(List.duplicate(tmpl({:f, 32}, {2}), 5))
      assert_error(Native.dispatch(:add, five, [a, a], nil, nil, 0), "outputs")

      assert_error(
        Native.dispatch(:add, tmpl({:f, 32}, {1 <<< 62, 1 <<< 62}), [a, a], nil, nil, 0),
        "2^63"
      )
    end

    test "arguments" do
      a = f32([1.0, 2.0])
      t = tmpl({:f, 32}, {2})
      assert_error(Native.dispatch(:add, t, [a | a], nil, nil, 0), "proper list")
      assert_error(Native.dispatch(:add, t, :not_a_list, nil, nil, 0), "proper list")
      assert_error(add(a, self()), "unsupported term")
      assert_error(add(a, fn -> 1 end), "unsupported term")
      assert_error(add(a, make_ref()), "not an Emily tensor")
      assert_error(add(a, %{foo: 1}), "unsupported map")
      assert_error(add(a, 1 <<< 70), "64-bit")
      assert_error(add(a, <<1::3>>), "bitstring")
      assert_error(add(a, 1.5), "")
      assert_error(add(a, nil), "")
      assert_error(add(a, [a, a]), "")
      assert_error(add(a, %{__struct__: Complex, re: "x", im: 0}), "Complex")

      assert_error(
        add(a, %{data: %{ref: make_ref()}, type: {:f, 32}, shape: {2}}),
        "not an Emily tensor"
      )

      assert_error(add(a, %{data: %{ref: a}, type: {:s, 32}, shape: {2}}), "struct says")
      assert_error(add(a, %{data: %{ref: a}, type: {:f, 32}, shape: {3}}), "struct says")
      assert_error(add(a, %{data: %{ref: a}, type: {:f, 32}}), "needs")
      assert_error(add(a, %{data: 7, type: {:f, 32}, shape: {2}}), "unsupported tensor data")

      deep = Enum.reduce(1..100_000, a, fn _, acc -> [acc] end)
      assert_error(add(a, deep), "nested too deeply")
      deep_tuple = Enum.reduce(1..1000, a, fn _, acc -> {acc} end)
      assert_error(add(a, deep_tuple), "nested too deeply")

      binback = %{__struct__: Nx.BinaryBackend, state: <<1, 2, 3>>}
      assert_error(add(a, %{data: binback, type: {:f, 32}, shape: {2}}), "BinaryBackend")
    end

    test "options and arguments the callback does not expect" do
      a = f32([1.0, 2.0])
      t = tmpl({:f, 32}, {})
      assert_error(Native.dispatch(:sum, t, [a, [axes: :bad, keep_axes: false]], nil, nil, 0), "")
      assert_error(Native.dispatch(:sum, t, [a, [axes: [5], keep_axes: false]], nil, nil, 0), "")

      assert_error(
        Native.dispatch(:sum, t, [a, [axes: [1 <<< 40], keep_axes: false]], nil, nil, 0),
        ""
      )

      assert_error(Native.dispatch(:sum, t, [a, [{"axes", nil}]], nil, nil, 0), "")
      assert_error(Native.dispatch(:sum, t, [a], nil, nil, 0), "")
      assert_error(Native.dispatch(:sum, t, [], nil, nil, 0), "")
      assert_error(Native.dispatch(:transpose, tmpl({:f, 32}, {2}), [a, [3]], nil, nil, 0), "")
      assert_error(Native.dispatch(:squeeze, tmpl({:f, 32}, {2}), [a, [0]], nil, nil, 0), "")
      assert_error(Native.dispatch(:reshape, tmpl({:f, 32}, {3}), [a], nil, nil, 0), "")
      assert_error(Native.dispatch(:iota, tmpl({:f, 32}, {2}), [9, []], nil, nil, 0), "")

      assert_error(
        Native.dispatch(:slice, tmpl({:f, 32}, {5}), [a, [0], [5], [1]], nil, nil, 0),
        ""
      )

      assert_error(
        Native.dispatch(:slice, tmpl({:f, 32}, {1}), [a, [0], [1], [0]], nil, nil, 0),
        ""
      )

      assert_error(
        Native.dispatch(:concatenate, tmpl({:f, 32}, {4}), [[a, :x], 0], nil, nil, 0),
        ""
      )

      assert_error(
        Native.dispatch(:constant, tmpl({:f, 32}, {}), [:not_a_number, []], nil, nil, 0),
        ""
      )

      assert_error(Native.dispatch(:as_type, tmpl({:f, 32}, {2}), [], nil, nil, 0), "")
      assert_error(Native.dispatch(:add, tmpl({:f, 32}, {2}), [a, a], nil, nil, 7), "mode")
    end

    test "huge shapes" do
      assert_error(Native.dispatch(:iota, tmpl({:f, 64}, {1 <<< 40}), [nil, []], nil, nil, 0), "")

      assert_error(
        Native.dispatch(:constant, tmpl({:u, 8}, {1 <<< 31, 1 <<< 31}), [0, []], nil, nil, 0),
        ""
      )

      assert_error(
        Native.dispatch(:eye, tmpl({:f, 32}, {1 <<< 30, 1 <<< 30}), [[]], nil, nil, 0),
        ""
      )

      assert_error(Native.from_binary(:cpu, {:f, 32}, {1 <<< 62}, <<0::32>>), "")
      assert_error(Native.from_binary(:cpu, {:f, 32}, {1 <<< 62, 8}, <<0::32>>), "2^63")
      assert_error(Native.from_binary(:cpu, {:f, 32}, {3}, <<0::32>>), "")
      a = f32([1.0])
      # a broadcast is a view (no memory); reading it back must fail cleanly
      big =
        Native.dispatch(
          :broadcast,
          tmpl({:f, 32}, {1 <<< 40, 1 <<< 18}),
          [a, {1 <<< 40, 1 <<< 18}, [1]],
          nil,
          nil,
          0
        )

      assert is_reference(big)
      assert_error(Native.to_binary(big, nil), "")

      assert_error(
        Native.dispatch(:add, tmpl({:f, 32}, {1 <<< 40, 1 <<< 18}), [big, big], nil, nil, 0),
        ""
      )
    end

    test "devices" do
      a = f32([1.0, 2.0])
      assert_error(Native.dispatch(:add, tmpl({:f, 32}, {2}), [a, a], :tpu, nil, 0), "device")

      assert_error(
        Native.dispatch(:add, tmpl({:f, 32}, {2}), [a, a], {:cuda, -1}, nil, 0),
        "device"
      )

      assert_error(Native.device_check({:cuda, 99}), "")
      assert_error(Native.from_binary(:gpu, {:f, 32}, {1}, <<0::32>>), "device")
      assert_error(Native.to_device(a, {:cuda, 99}), "")
      assert_error(Native.synchronize(:nope), "device")
      assert_error(Native.memory_stats({:cuda, 99}), "")
      assert_error(Native.stream_new({:cuda, 99}), "")
      assert_error(Native.from_binary(:cpu, {:f, 12}, {1}, <<0>>), "not supported")
      assert_error(Native.from_binary(:cpu, {:f, 32}, {1}, :nope), "binary")
    end

    test "streams that are not streams" do
      a = f32([1.0, 2.0])
      assert_error(Native.dispatch(:add, tmpl({:f, 32}, {2}), [a, a], nil, make_ref(), 0), "stream")
      assert_error(Native.dispatch(:add, tmpl({:f, 32}, {2}), [a, a], nil, a, 0), "stream")
      assert_error(Native.stream_synchronize(a), "stream")
      assert_error(Native.stream_device(:x), "stream")
    end
  end

  describe "dispatch's own arguments (fuzz findings)" do
    # `result` is what dispatch may return: a tensor, a list of them, or
    # {:error, message}; never a crash, never another term
    defp dispatch_result?(result) do
      case result do
        {:error, message} -> is_binary(message)
        list when is_list(list) -> Enum.all?(list, &is_reference/1)
        other -> is_reference(other)
      end
    end

    test "a callback name with a NUL byte names no callback" do
      # a C string stops at the NUL: "add\0x" used to run add
      a = f32([1.0, 2.0])
      t = tmpl({:f, 32}, {2})

      for name <- [:"add\0x", "add\0x", :"add\0", "add\0", "\0add", :"\0"] do
        assert_error(Native.dispatch(name, t, [a, a], nil, nil, 0), "NUL")
      end

      assert to_f32(Native.dispatch("add", t, [a, a], nil, nil, 0)) == [2.0, 4.0]
      assert to_f32(Native.dispatch(:add, t, [a, a], nil, nil, 0)) == [2.0, 4.0]
    end

    test "names longer than any callback's, empty and not Latin-1" do
      a = f32([1.0, 2.0])
      t = tmpl({:f, 32}, {2})
      longest = Native.callbacks() |> Enum.map(&byte_size(Atom.to_string(&1))) |> Enum.max()
      long = String.duplicate("a", longest + 1)

      for name <- [
            long,
            String.to_atom(long),
            String.to_atom(String.duplicate("x", 255)),
            String.duplicate("x", 100_000),
            "add" <> String.duplicate(" ", 70),
            :加,
            :ädd
          ] do
        assert_error(Native.dispatch(name, t, [a, a], nil, nil, 0), "unknown callback")
      end

      assert_error(Native.dispatch("", t, [a, a], nil, nil, 0), "callback name")
      assert_error(Native.dispatch(:"", t, [a, a], nil, nil, 0), "callback name")
      assert_error(Native.dispatch(<<1::3>>, t, [a, a], nil, nil, 0), "callback name")
      assert_error(Native.dispatch({:add}, t, [a, a], nil, nil, 0), "callback name")
    end

    test "wrong numbers of arguments, for every callback" do
      a = f32([1.0, 2.0])
      t = tmpl({:f, 32}, {2})

      for callback <- Native.callbacks(),
          args <- [[], [a], [a, a, a], List.duplicate(a, 9), List.duplicate([], 1000)] do
        result = Native.dispatch(callback, t, args, nil, nil, 0)
        assert dispatch_result?(result), "#{callback}/#{length(args)}: #{inspect(result)}"
        # no callback takes nothing, nor nine or more arguments
        if length(args) == 0 or length(args) >= 9,
          do: assert_error(result, "")
      end
    end

    test "arguments that are not a proper list" do
      a = f32([1.0, 2.0])
      t = tmpl({:f, 32}, {2})

      for args <- [nil, {a, a}, %{0 => a}, "ab", a, 1, [a, a | :tail], [a | a]] do
        assert_error(Native.dispatch(:add, t, args, nil, nil, 0), "proper list")
      end
    end

    test "huge integers everywhere" do
      a = f32([1.0, 2.0])
      t = tmpl({:f, 32}, {2})
      huge = [1 <<< 63, 1 <<< 64, -(1 <<< 63) - 1, -(1 <<< 64), 1 <<< 10_000, -(1 <<< 10_000)]

      for n <- huge do
        # as arguments: tensors' scalars, axes, options
        assert_error(add(a, n), "")

        assert_error(
          Native.dispatch(
            :sum,
            tmpl({:f, 32}, {}),
            [a, [axes: [n], keep_axes: false]],
            nil,
            nil,
            0
          ),
          ""
        )

        assert_error(Native.dispatch(:transpose, t, [a, [n]], nil, nil, 0), "")
        assert_error(Native.dispatch(:iota, t, [n, []], nil, nil, 0), "")

        assert_error(
          Native.dispatch(:slice, tmpl({:f, 32}, {1}), [a, [n], [1], [1]], nil, nil, 0),
          ""
        )

        # in the template, the device, the mode
        assert_error(Native.dispatch(:add, tmpl({:f, 32}, {n}), [a, a], nil, nil, 0), "")
        assert_error(Native.dispatch(:add, tmpl({:f, n}, {2}), [a, a], nil, nil, 0), "")
        assert_error(Native.dispatch(:add, t, [a, a], {:cuda, n}, nil, 0), "device")
        assert_error(Native.dispatch(:add, t, [a, a], nil, nil, n), "mode")
        # as a constant: an error, or (1 <<< 63, a u64) a tensor; never a crash
        assert dispatch_result?(
                 Native.dispatch(:constant, tmpl({:s, 64}, {}), [n, []], nil, nil, 0)
               )
      end

      for n <- [-1, -(1 <<< 31), 1 <<< 31, 1 <<< 32] do
        assert_error(Native.dispatch(:add, t, [a, a], nil, nil, n), "mode")
      end
    end

    test "atoms where they mean nothing" do
      a = f32([1.0, 2.0])
      t = tmpl({:f, 32}, {2})

      for atom <- [:foo, true, false, :infinity_, :"", :"\0", :nil_] do
        assert_error(add(a, atom), "")
        assert_error(Native.dispatch(:add, t, [a, a], atom, nil, 0), "device")
        assert_error(Native.dispatch(:add, t, [a, a], nil, atom, 0), "stream")
        assert_error(Native.dispatch(:add, t, [a, a], nil, nil, atom), "mode")
        assert_error(Native.dispatch(:add, atom, [a, a], nil, nil, 0), "template")
        assert_error(Native.dispatch(:add, tmpl({atom, 32}, {2}), [a, a], nil, nil, 0), "")
        assert_error(Native.dispatch(:add, tmpl({:f, 32}, atom), [a, a], nil, nil, 0), "shape")
        assert_error(Native.dispatch(:add, tmpl({:f, 32}, {atom}), [a, a], nil, nil, 0), "")
        assert_error(Native.dispatch(:add, t, atom, nil, nil, 0), "proper list")

        assert_error(
          Native.dispatch(
            :sum,
            tmpl({:f, 32}, {}),
            [a, [axes: atom, keep_axes: false]],
            nil,
            nil,
            0
          ),
          ""
        )

        # an option the callback does not know is ignored, as Keyword.get would
        assert dispatch_result?(
                 Native.dispatch(:sum, tmpl({:f, 32}, {}), [a, [{atom, nil}]], nil, nil, 0)
               )
      end
    end
  end

  describe "dead and foreign resources" do
    test "a deallocated tensor" do
      a = f32([1.0, 2.0])
      b = f32([1.0, 2.0])
      assert Native.deallocate(a) == :ok
      assert Native.deallocate(a) == :already_deallocated
      assert_error(add(a, b), "deallocated")
      assert_error(add(b, %{data: %{ref: a}, type: {:f, 32}, shape: {2}}), "deallocated")
      assert_error(Native.to_binary(a, nil), "deallocated")
      assert_error(Native.tensor_info(a), "deallocated")
      assert_error(Native.to_device(a, :cpu), "deallocated")
      assert_error(Native.to_pointer(a), "deallocated")
    end

    test "resources of the wrong type" do
      s = Native.stream_new(:cpu)
      a = f32([1.0, 2.0])
      assert_error(add(a, s), "not an Emily tensor")
      assert_error(Native.to_binary(s, nil), "Emily tensor")
      assert_error(Native.to_binary(make_ref(), nil), "Emily tensor")
      assert_error(Native.deallocate(s), "Emily tensor")
      assert_error(Native.tensor_info(:foo), "Emily tensor")
    end

    test "deallocating while other processes use the tensor" do
      for _ <- 1..50 do
        a = f32(Enum.map(1..64, &(&1 * 1.0)))

        users =
          for _ <- 1..4 do
            Task.async(fn ->
              for _ <- 1..20 do
                case Native.dispatch(:add, tmpl({:f, 32}, {64}), [a, a], nil, nil, 0) do
                  ref when is_reference(ref) -> :ok
                  {:error, msg} -> assert msg =~ "deallocated"
                end
              end
            end)
          end

        Native.deallocate(a)
        Enum.each(users, &Task.await/1)
      end
    end
  end

  test "to_binary limits" do
    a = f32([1.0, 2.0])
    assert byte_size(Native.to_binary!(a, -5)) == 8
    assert byte_size(Native.to_binary!(a, 100)) == 8
    assert byte_size(Native.to_binary!(a, :all)) == 8
  end

  test "set_inline_limit" do
    old = Native.set_inline_limit(0)
    a = f32([1.0, 2.0])
    assert to_f32(add(a, a)) == [2.0, 4.0]
    assert Native.set_inline_limit(old) == 0
    assert_raise ArgumentError, fn -> Native.set_inline_limit(-1) end
  end
end

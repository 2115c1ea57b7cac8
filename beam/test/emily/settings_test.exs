defmodule Emily.SettingsTest do
  # VM-wide engine settings; sync, so that no other test's dots or frees
  # run while they change
  use ExUnit.Case, async: false
  import Bitwise
  alias Emily.Native

  defp assert_error(result, pattern) do
    assert {:error, message} = result
    assert message =~ pattern, "#{inspect(message)} does not match #{inspect(pattern)}"
  end

  test "the CPU allocator's cache is reported and released" do
    # a 1 MiB buffer freed is kept for reuse (not under ASan, whose
    # builds cache nothing), and release_cache frees it
    t =
      Native.from_binary!(
        :cpu,
        {:f, 64},
        {131_072},
        :binary.copy(<<0.0::float-64-native>>, 131_072)
      )

    Native.deallocate(t)
    assert %{cached: cached} = Native.memory_stats(:cpu)

    if System.get_env("EMILY_SAN") in [nil, "", "0"],
      do: assert(cached >= 1 <<< 20),
      else: assert(cached == 0)

    assert Emily.release_cache(:cpu) == :ok
    assert %{cached: 0} = Native.memory_stats(:cpu)
    assert_error(Native.release_cache(:tpu), "device")
  end

  test "the dot precision is :fast unless EMILY_DOT_PRECISION says highest" do
    want = if System.get_env("EMILY_DOT_PRECISION") == "highest", do: :highest, else: :fast
    assert Application.fetch_env!(:emily, :initial_dot_precision) == want
  end

  test "the dot precision can be read and set for the VM" do
    # test_helper.exs selects :highest for the suite
    assert Emily.dot_precision() == :highest

    try do
      assert Emily.put_dot_precision(:fast) == :ok
      assert Emily.dot_precision() == :fast
      assert_error(Native.set_dot_precision(:medium), "expected :highest or :fast")
      assert_error(Native.set_dot_precision("fast"), "expected :highest or :fast")

      assert_raise ArgumentError, ~r/dot precision must be :highest or :fast, got: :medium/, fn ->
        Emily.put_dot_precision(:medium)
      end

      assert_raise ArgumentError, ~r/dot precision must be :highest or :fast/, fn ->
        Emily.with_dot_precision(:medium, fn -> :ok end)
      end
    after
      Emily.put_dot_precision(:highest)
    end

    assert Emily.dot_precision() == :highest
  end

  test "with_dot_precision/2 scopes a precision to the process and restores the previous" do
    assert Process.get(Emily.DotPrecision) == nil

    assert Emily.with_dot_precision(:fast, fn ->
             inner = Emily.with_dot_precision(:highest, fn -> Process.get(Emily.DotPrecision) end)
             {inner, Process.get(Emily.DotPrecision)}
           end) == {:highest, :fast}

    assert Process.get(Emily.DotPrecision) == nil

    assert_raise RuntimeError, fn -> Emily.with_dot_precision(:fast, fn -> raise "boom" end) end
    assert Process.get(Emily.DotPrecision) == nil
    # the VM's setting is untouched
    assert Emily.dot_precision() == :highest
  end
end

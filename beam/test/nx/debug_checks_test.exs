if Code.ensure_loaded?(Nx) do
  defmodule Emily.DebugChecksTest do
    # Runs only when Emily.Backend was compiled with both debug checks:
    #   EMILY_DEBUG_CHECKS=1 mix test --only debug_checks
    use Emily.Test.NxCase, async: true
    @moduletag :debug_checks

    test "out-of-range indices raise before the callback runs" do
      t = Nx.tensor([[1, 2], [3, 4]])

      assert_raise ArgumentError, ~r/take: index 2 is out of bounds for axis 0 of size 2/, fn ->
        Nx.take(t, Nx.tensor([0, 2]))
      end

      assert_raise ArgumentError, ~r/take_along_axis: index -1 is out of bounds for axis 1/, fn ->
        Nx.take_along_axis(t, Nx.tensor([[0, -1], [1, 0]]), axis: 1)
      end

      assert_raise ArgumentError, ~r/gather: index 5 is out of bounds for axis 1 of size 2/, fn ->
        Nx.gather(t, Nx.tensor([[0, 5]]))
      end

      assert_raise ArgumentError, ~r/indexed_put: index 3 is out of bounds for axis 0/, fn ->
        Nx.indexed_put(t, Nx.tensor([[3, 0]]), Nx.tensor([9]))
      end

      assert_raise ArgumentError, ~r/indexed_add: index -2 is out of bounds/, fn ->
        Nx.indexed_add(t, Nx.tensor([[0, -2]]), Nx.tensor([9]))
      end

      assert Nx.to_list(Nx.take(t, Nx.tensor([1, 0]))) == [[3, 4], [1, 2]]
    end

    test "NaN and infinity produced by a callback raise" do
      assert_raise ArgumentError, ~r/divide: produced NaN or infinity/, fn ->
        Nx.divide(Nx.tensor([1.0, 0.0]), Nx.tensor([0.0, 0.0]))
      end

      assert_raise ArgumentError, ~r/log: produced NaN or infinity/, fn ->
        Nx.log(Nx.tensor([-1.0]))
      end

      # creation callbacks may make them on purpose; integers never have them
      assert Nx.to_list(Nx.add(Nx.tensor([1, 2]), 1)) == [2, 3]
      assert Nx.to_list(Nx.sqrt(Nx.tensor([4.0]))) == [2.0]
    end
  end
end

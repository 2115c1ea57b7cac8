if Code.ensure_loaded?(Nx) do
  defmodule Emily.Test.SeededTensor do
    @moduledoc """
    The seeded inputs of the Nx tests: the same values on every run, made
    on Nx.BinaryBackend (in f64, then cast), so that they never depend on
    the backend under test. Each test file passes its own seed tuple, so
    its values stay those its bounds were written for.
    """

    @doc """
    A tensor of `type` and `shape` on Nx.BinaryBackend with values in
    `[lo, lo + width)`: `:rand` seeded with `:exsss` and `seed` (a tuple
    of three integers), one uniform draw per element in row-major order.
    """
    def uniform(type, shape, seed, lo, width) do
      :rand.seed(:exsss, seed)
      n = shape |> Tuple.to_list() |> Enum.product()

      for(_ <- 1..n//1, do: lo + width * :rand.uniform())
      |> Nx.tensor(type: :f64, backend: Nx.BinaryBackend)
      |> Nx.reshape(shape)
      |> Nx.as_type(type)
    end
  end
end

defmodule Emily.Test.NxExclusions do
  @moduledoc """
  Nx doctests that run on Emily.Backend but are not expected to print what
  the doctest prints, each with its reason. test_helper.exs excludes them by
  test name (doctest numbers are those of the Nx version named). Doctests
  that fail only because the engine lacks a callback are not listed: they
  must pass once the callback lands.
  """

  # The engine's qr is Nx's Householder QR as the corpus's reference runs
  # it: reflections applied as rank-1 updates (Nx main since nx#1784,
  # whose version string is still 0.13.1; the corpus matches it bit for
  # bit). The 0.13.1 tag multiplies by explicit Householder matrices
  # instead: R[2][2] of this doctest is then an exact tie between two f32
  # values, rounded to even (1.4142137); the rank-1 form gives 1.4142135,
  # which Nx main's own doctest prints. (On Nx 0.7, linalg: :reference
  # is Nx 0.7's explicit products, so its qr doctest passes.)
  @qr_tie "last printed digit: R[2][2] is 1.4142135 (the corpus's reference, Nx's rank-1 " <>
            "Householder updates) where this Nx's explicit Householder product rounds a tie to 1.4142137"

  @lists %{
    "0.13.1" => [
      {"doctest Nx.LinAlg.qr/2 (58)", @qr_tie}
    ],
    # Nx 0.7's own lu, eigh, qr, svd and solve run under linalg: :reference
    "0.7.2" => []
  }

  @doc "The exclusions for the loaded Nx version: [{test name, reason}]."
  def list do
    case Application.spec(:nx, :vsn) do
      nil -> []
      vsn -> Map.get(@lists, to_string(vsn), [])
    end
  end

  @doc "ExUnit exclude filters (by test name)."
  def filters, do: for({name, _} <- list(), do: {:test, name})

  @doc "Prints the exclusions with their reasons."
  def print do
    case list() do
      [] ->
        :ok

      list ->
        IO.puts(
          "Nx #{Application.spec(:nx, :vsn)} doctests excluded on Emily.Backend (#{length(list)}):"
        )

        for {name, reason} <- list, do: IO.puts("  #{name}: #{reason}")
    end
  end
end

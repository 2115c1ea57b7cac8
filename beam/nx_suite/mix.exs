# The throwaway project in which scripts/nx_suite runs Nx's own ExUnit
# suite (the `nx/test` folder of an Nx checkout, copied in next to this
# file) on Emily.Backend or on Nx.BinaryBackend. It is generated outside
# the repository; nothing of Nx is ever committed.
#
#   EMILY_BEAM     the copy of Emily's package (beam/) it runs, a path dependency
#   EMILY_NX_PATH  the checkout's nx/ folder (Nx, complex and telemetry
#                  as path dependencies, as beam/mix.exs takes them)
defmodule EmilyNxSuite.MixProject do
  use Mix.Project

  def project do
    [
      app: :emily_nx_suite,
      version: "0.0.0",
      elixir: ">= 1.14.0",
      elixirc_paths: ["test/support"],
      deps: deps()
    ]
  end

  def application, do: [extra_applications: [:logger]]

  defp deps do
    beam = System.fetch_env!("EMILY_BEAM")
    nx = Path.expand(System.fetch_env!("EMILY_NX_PATH"))

    unless Code.ensure_loaded?(Emily.OfflineHexSCM),
      do: Code.require_file("mix/offline_hex_scm.exs", beam)

    unless Emily.OfflineHexSCM in Mix.SCM.available(), do: Mix.SCM.append(Emily.OfflineHexSCM)

    complex = System.get_env("EMILY_COMPLEX_PATH", Path.expand("../../complex", nx))
    telemetry = System.get_env("EMILY_TELEMETRY_PATH", Path.expand("../../telemetry", nx))

    [
      {:emily, path: beam},
      {:nx, path: nx, override: true},
      {:complex, path: complex, override: true},
      {:telemetry, path: telemetry, override: true}
    ]
  end
end

defmodule Emily.OfflineHexSCM do
  @moduledoc false
  # Used only with EMILY_NX_PATH, where Hex may be absent (this
  # repository's machines and CI have no hex.pm): it accepts the hex
  # declarations of Nx's own deps (complex, telemetry) so that Mix can
  # load them; Emily's path deps with `override: true` replace them. A dep
  # left to this SCM is an error that names it.
  @behaviour Mix.SCM

  @impl true
  def fetchable?, do: false
  @impl true
  def format(_opts), do: "hex package (offline: provide it as a path dep)"
  @impl true
  def format_lock(_opts), do: nil

  @impl true
  def accepts_options(_app, opts) do
    if Enum.any?([:git, :github, :path, :in_umbrella], &Keyword.has_key?(opts, &1)),
      do: nil,
      else: opts
  end

  @impl true
  def checked_out?(_opts), do: false
  @impl true
  def lock_status(_opts), do: :ok
  @impl true
  def equal?(a, b), do: a == b
  @impl true
  def managers(_opts), do: []

  @impl true
  def checkout(opts), do: unavailable(opts)
  @impl true
  def update(opts), do: unavailable(opts)

  defp unavailable(opts) do
    Mix.raise(
      "#{inspect(opts[:dest])}: a hex dependency with no Hex available; " <>
        "give it as a path dep (EMILY_COMPLEX_PATH, EMILY_TELEMETRY_PATH)"
    )
  end
end

defmodule Emily.Telemetry do
  @moduledoc """
  Telemetry events, emitted with `:telemetry.span/3` when `:telemetry` is
  available (Nx depends on it):

    * `[:emily, :eval, :start | :stop | :exception]` - every callback run by
      the engine. Metadata: `:op` (the Nx.Backend callback name), `:shapes`
      and `:types` (of the tensor arguments, in order).
    * `[:emily, :to_binary, :start | :stop | :exception]` - reading a tensor
      back to an Elixir binary. Metadata: `:op` (`:to_binary`), `:shapes`,
      `:types`.
    * `[:emily, :fallback, :start | :stop | :exception]` - a callback that
      takes an Elixir function (`reduce`, `window_reduce`, Nx 0.7's `map`)
      and runs through `Nx.BinaryBackend`. Same metadata.

  Measurements are those of `:telemetry.span/3` (`:system_time`,
  `:monotonic_time`, `:duration`).

  Fallbacks are configured with

      config :emily, fallback: :silent | :warn | :raise

  (`:silent` by default): `:warn` logs each fallback, `:raise` raises
  `ArgumentError` instead of falling back.
  """

  @telemetry Code.ensure_loaded?(:telemetry)

  @doc "Whether events are emitted (`:telemetry` was available at compile time)."
  def enabled?, do: @telemetry

  @doc false
  # `metadata` is a function, called only when a handler is attached.
  if @telemetry do
    def span(kind, metadata, fun) do
      if listened?(kind) do
        meta = metadata.()
        :telemetry.span([:emily, kind], meta, fn -> {fun.(), meta} end)
      else
        fun.()
      end
    end
  else
    def span(_kind, _metadata, fun), do: fun.()
  end

  cond do
    not @telemetry ->
      nil

    # :telemetry's own handler lookup (one ETS read, what :telemetry.execute
    # does first): when nothing listens to an event, building its metadata
    # and the span's timestamps is skipped. It costs a few hundred
    # nanoseconds per op instead of a microsecond or more.
    Code.ensure_loaded?(:telemetry_handler_table) and
        function_exported?(:telemetry_handler_table, :list_for_event, 1) ->
      defp listened?(kind) do
        # telemetry 1.3 keeps handlers in a named ETS table: none at all is
        # one counter read. 1.4 has no such table (:undefined) and looks
        # handlers up in a persistent term: ask it for the three events.
        :ets.info(:telemetry_handler_table, :size) != 0 and listened_events?(kind)
      end

      defp listened_events?(kind) do
        :telemetry_handler_table.list_for_event([:emily, kind, :stop]) != [] or
          :telemetry_handler_table.list_for_event([:emily, kind, :start]) != [] or
          :telemetry_handler_table.list_for_event([:emily, kind, :exception]) != []
      end

    true ->
      defp listened?(_kind), do: true
  end
end

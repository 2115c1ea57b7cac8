if Code.ensure_loaded?(Nx.Defn.Compiler) do
  defmodule Emily.Compiler do
    @moduledoc """
    An `Nx.Defn.Compiler` that lowers a whole `defn` to one engine graph
    (`include/emily/graph.h`), compiled once per function and input shapes
    and run in a single NIF call.

        Nx.Defn.default_options(compiler: Emily.Compiler)
        Nx.Defn.jit(&MyModel.predict/2, compiler: Emily.Compiler).(params, input)
        Nx.Serving.new(fun, defn_options: [compiler: Emily.Compiler])

    Compiling traces the expression through `Emily.Backend`: every
    callback the evaluator would run is recorded as a graph call with the
    same arguments instead (so a compiled function computes what
    `Nx.Defn.Evaluator` on `Emily.Backend` computes), then the engine
    folds constant sub-expressions, drops unused calls and frees each
    intermediate after its last use (docs/graph.md). One run is then one
    NIF call, without an Elixir step per operation.

    Options (besides the evaluator's, which the fallback uses):

      * `:device` - where the graph runs: `:cpu` (default), `:cuda` or
        `{:cuda, i}`. Inputs on another device or backend are copied there.
      * `:dot_precision` - `:fast` or `:highest` for the function's `dot`
        and `conv` (default: the process's or the VM's, `Emily.dot_precision/0`).
      * `:compiler_fallback` - what to do with an expression the graph
        cannot hold (`while` and `cond`, hooks, `runtime_call`, callbacks
        taking Elixir functions, vectorized inputs): `:eval` (default)
        runs it with `Nx.Defn.Evaluator` on `Emily.Backend` and emits a
        `[:emily, :compiler, :fallback]` telemetry event with the reason
        (each graph compiled emits `[:emily, :compiler, :compile]`, its
        counts as measurements and metadata);
        `:raise` raises `ArgumentError`.
      * `:optimize` - `false` runs every recorded call one by one
        (default `true`).
      * `:save_graph` - a path: the compiled graph is also saved there, to
        be run from C (`emily_graph_load`, `build/emily_run`).

    Compiled graphs are cached by the function, the input types and shapes
    and these options (`clear_cache/0` empties the cache). Runs of one
    compiled graph are serialized; concurrent callers of the same function
    wait for each other (`Nx.Serving` partitions each compile their own).
    """

    @behaviour Nx.Defn.Compiler

    alias Nx.Defn.{Composite, Expr, Tree}

    @compiler_keys [:device, :dot_precision, :compiler_fallback, :optimize, :save_graph]

    # Expressions the graph does not hold: control flow that needs a value
    # on the host, side effects, and Elixir functions.
    @unsupported [:while, :cond, :hook, :token, :attach_token, :runtime_call, :fun]

    @impl true
    def __partitions_options__(opts) do
      List.duplicate(opts, Keyword.get(opts, :max_concurrency, 1))
    end

    @impl true
    def __to_backend__(opts) do
      {Emily.Backend, device: Keyword.get(opts, :device, :cpu)}
    end

    @impl true
    def __jit__(key, vars, fun, args_list, opts) do
      __compile__(key, vars, fun, opts).(args_list)
    end

    # Nx 0.7's streams (a callback that Nx 0.13 no longer has) run
    # through the evaluator
    if {:__stream__, 7} in Nx.Defn.Compiler.behaviour_info(:callbacks) do
      @impl true
      def __stream__(key, input, acc, vars, fun, args, opts) do
        apply(Nx.Defn.Evaluator, :__stream__, [
          key,
          input,
          acc,
          vars,
          fun,
          args,
          evaluator_opts(opts)
        ])
      end
    end

    @impl true
    def __compile__(key, vars, fun, opts) do
      {copts, _} = Keyword.split(opts, @compiler_keys)
      cache_key = {__MODULE__, key, templates(vars), copts}

      case :persistent_term.get(cache_key, nil) do
        nil ->
          runner = build(key, vars, fun, opts)
          :persistent_term.put(cache_key, runner)
          runner

        runner ->
          runner
      end
    end

    @doc "Empties the cache of compiled graphs."
    def clear_cache do
      for {{__MODULE__, _, _, _} = key, _} <- :persistent_term.get(),
          do: :persistent_term.erase(key)

      :ok
    end

    @doc """
    What the last compiled function run by this process was: `{:graph,
    stats}` with the engine's counts for its graph (`:calls`, `:folded`,
    `:dropped`, `:fused_calls`, `:steps`, `:peak_bytes`...), or
    `{:fallback, reason}` when it ran on the evaluator; `nil` before any.
    """
    def last_run, do: Process.get(__MODULE__.LastRun)

    defp templates(vars) do
      vars
      |> Composite.flatten_list()
      |> Enum.map(fn t -> {t.type, t.shape, t.names, Map.get(t, :vectorized_axes, [])} end)
    end

    defp evaluator_opts(opts), do: Keyword.drop(opts, @compiler_keys)

    ## Building

    defp build(key, vars, fun, opts) do
      fallback = Keyword.get(opts, :compiler_fallback, :eval)

      unless fallback in [:eval, :raise] do
        raise ArgumentError,
              "Emily.Compiler: :compiler_fallback must be :eval or :raise, got: #{inspect(fallback)}"
      end

      device = Emily.device!(Keyword.get(opts, :device, :cpu))
      precision = opts[:dot_precision] && Emily.validate_dot_precision!(opts[:dot_precision])

      case trace(key, vars, fun, device, precision) do
        {:ok, graph, outputs} ->
          :ok =
            Emily.Native.ok!(
              Emily.Native.graph_compile(graph, device, Keyword.get(opts, :optimize, true))
            )

          stats = Emily.Native.graph_stats(graph)

          :telemetry.execute(
            [:emily, :compiler, :compile],
            %{calls: stats.calls, steps: stats.steps},
            stats
          )

          if path = opts[:save_graph], do: Emily.Native.ok!(Emily.Native.graph_save(graph, path))
          graph_runner(graph, outputs, device)

        {:fallback, reason} ->
          if fallback == :raise do
            raise ArgumentError, "Emily.Compiler cannot compile this function: #{reason}"
          end

          :telemetry.execute([:emily, :compiler, :fallback], %{count: 1}, %{reason: reason})
          evaluator = Nx.Defn.Evaluator.__compile__(key, vars, fun, evaluator_opts(opts))

          fn args_list ->
            Process.put(__MODULE__.LastRun, {:fallback, reason})

            Nx.with_default_backend({Emily.Backend, device: device}, fn -> evaluator.(args_list) end)
          end
      end
    end

    defp graph_runner(graph, {result_template, output_specs}, device) do
      fn args_list ->
        for params <- args_list do
          tensors = Enum.map(params, &to_emily(&1.(), device))

          datas =
            case Emily.Native.graph_run(graph, tensors) do
              {:ok, datas} -> datas
              {:error, message} -> raise ArgumentError, message
            end

          Process.put(__MODULE__.LastRun, {:graph, Emily.Native.graph_stats(graph)})
          fill_outputs(result_template, output_specs, datas)
        end
      end
    end

    defp to_emily(%Nx.Tensor{data: %Emily.Backend{}} = t, _device), do: Nx.devectorize(t)

    defp to_emily(%Nx.Tensor{} = t, device),
      do: t |> Nx.devectorize() |> Nx.backend_copy({Emily.Backend, device: device})

    defp to_emily(number, device) when is_number(number) or is_struct(number, Complex),
      do: Nx.tensor(number, backend: {Emily.Backend, device: device})

    # output_specs: per flattened output, {:graph, k} (the k-th graph output)
    # or {:fixed, tensor} (a result that does not depend on the inputs)
    defp fill_outputs(template, specs, datas) do
      datas = List.to_tuple(datas)

      {result, []} =
        Composite.traverse(template, specs, fn out, [spec | rest] ->
          data =
            case spec do
              {:graph, k} -> elem(datas, k)
              {:fixed, tensor} -> tensor.data
            end

          {%{out | data: data}, rest}
        end)

      result
    end

    ## Tracing

    defp trace(key, vars, fun, device, precision) do
      expr = fun.(vars)

      with :ok <- check_vars(vars),
           :ok <- check_expr(expr) do
        record(key, vars, expr, device, precision)
      end
    end

    defp check_vars(vars) do
      if Enum.any?(Composite.flatten_list(vars), &(Map.get(&1, :vectorized_axes, []) != [])),
        do: {:fallback, "vectorized inputs"},
        else: :ok
    end

    defp check_expr(expr) do
      {_, _} = Composite.traverse(expr, %{}, &scan/2)
      :ok
    catch
      {:unsupported, op} -> {:fallback, "the expression has #{inspect(op)}"}
    end

    defp scan(%Nx.Tensor{data: %Expr{id: id, op: op}} = t, seen) do
      cond do
        Map.has_key?(seen, id) -> {t, seen}
        op in @unsupported -> throw({:unsupported, op})
        true -> Tree.apply_args(t, Map.put(seen, id, true), &scan/2)
      end
    end

    defp scan(other, seen), do: {other, seen}

    defp record(key, vars, expr, device, precision) do
      {:ok, graph} = Emily.Native.graph_new()
      flat_vars = Composite.flatten_list(vars)

      params =
        Enum.map(flat_vars, fn var ->
          var = Nx.devectorize(var)
          {:ok, id} = Emily.Native.graph_param(graph, var.type, var.shape)
          traced = %{var | data: %Emily.Backend{ref: {:graph, id}}}
          fn -> traced end
        end)

      evaluator = Nx.Defn.Evaluator.__compile__(key, vars, fn _ -> expr end, [])
      previous_trace = Process.put(Emily.Compiler.Trace, graph)

      try do
        run = fn -> evaluator.([params]) end
        run = if precision, do: fn -> Emily.with_dot_precision(precision, run) end, else: run
        [result] = Nx.with_default_backend({Emily.Backend, device: device}, run)
        {ids, specs} = output_specs(result)
        :ok = Emily.Native.ok!(Emily.Native.graph_outputs(graph, ids))
        {:ok, graph, {result, specs}}
      rescue
        e -> {:fallback, Exception.message(e)}
      after
        if previous_trace,
          do: Process.put(Emily.Compiler.Trace, previous_trace),
          else: Process.delete(Emily.Compiler.Trace)
      end
    end

    defp output_specs(result) do
      {specs, {ids, _}} =
        [result]
        |> Composite.flatten_list()
        |> Enum.map_reduce({[], 0}, fn
          %Nx.Tensor{data: %Emily.Backend{ref: {:graph, id}}}, {ids, k} ->
            {{:graph, k}, {[id | ids], k + 1}}

          %Nx.Tensor{} = t, acc ->
            {{:fixed, t}, acc}
        end)

      {Enum.reverse(ids), specs}
    end
  end

  defmodule Emily.Compiler.Trace do
    @moduledoc false
    # Called by Emily.Backend while Emily.Compiler traces a defn (the graph
    # is in the process dictionary under this module): records a callback
    # call and returns the data of its outputs, graph values.

    alias Emily.Native

    def record(graph, name, out, args) do
      case Native.graph_call(graph, name, out, args) do
        {:ok, first} ->
          case out do
            %Nx.Tensor{} ->
              %Emily.Backend{ref: {:graph, first}}

            tuple when is_tuple(tuple) ->
              for k <- 0..(tuple_size(tuple) - 1), do: %Emily.Backend{ref: {:graph, first + k}}
          end

        {:error, :foreign_tensor} ->
          record(graph, name, out, import_foreign(args))

        {:error, message} ->
          raise ArgumentError, "#{name}: #{message}"
      end
    end

    defp import_foreign(%Nx.Tensor{data: %Emily.Backend{}} = t), do: t
    defp import_foreign(%Nx.Tensor{data: %Nx.BinaryBackend{}} = t), do: t
    defp import_foreign(%Nx.Tensor{} = t), do: Nx.backend_copy(t, Emily.Backend)
    defp import_foreign(list) when is_list(list), do: Enum.map(list, &import_foreign/1)

    defp import_foreign(tuple) when is_tuple(tuple),
      do: tuple |> Tuple.to_list() |> import_foreign() |> List.to_tuple()

    defp import_foreign(other), do: other
  end
end

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

      * `:device` - where the graph runs: `:cpu`, `:cuda` or `{:cuda, i}`;
        by default the device of the default backend when it is
        `Emily.Backend` (`Nx.default_backend({Emily.Backend, device: :cuda})`
        compiles for the GPU), else `:cpu`. Inputs on another device or
        backend are copied there.
      * `:dot_precision` - `:fast` or `:highest` for the function's `dot`
        and `conv` (default: the process's or the VM's, `Emily.dot_precision/0`).
      * `:compiler_fallback` - what to do with an expression the graph
        cannot hold (hooks that have a function, `runtime_call`, callbacks
        taking Elixir functions, vectorized inputs): `:eval` (default)
        runs it with `Nx.Defn.Evaluator` on `Emily.Backend` and emits a
        `[:emily, :compiler, :fallback]` telemetry event with the reason
        (each graph compiled emits `[:emily, :compiler, :compile]`, its
        counts as measurements and metadata);
        `:raise` raises `ArgumentError`.
      * `:optimize` - `false` runs every recorded call one by one
        (default `true`).
      * `:patterns` - `false` keeps the composed forms of layer norm, RMS
        norm, softmax and Bumblebee's attention as they are; by default
        (`true`) the engine replaces each one whose types and shapes are
        exactly those of a fused kernel (`Emily.Fast`'s, and a softmax)
        with that kernel's call, and emits a `[:emily, :compiler, :pattern]`
        telemetry event per pattern found in the graph, with measurements
        `%{count: n}` and metadata
        `%{pattern: :layer_norm | :rms_norm | :softmax | :attention}`
        (docs/graph.md says what each changes in rounding; an attention
        counts its softmax). The
        environment variable `EMILY_GRAPH_PATTERNS=0` turns it off too.
      * `:save_graph` - a path: the compiled graph is also saved there, to
        be run from C (`emily_graph_load`, `build/emily_run`). The
        environment variable `EMILY_SAVE_GRAPH_DIR` saves every graph
        compiled into that folder.

    Quantized matrices (`Emily.Quantization.quantize_tensor/2`) given to a
    jitted function (`Nx.Defn.jit/2`, Axon's and Bumblebee's parameters)
    stay quantized in the graph: their packed codes, scales and biases are
    parameters of the graph, each `Nx.dot` of one (with no batch axes) is
    one `quantized_matmul` call, and every other use reads the matrix
    dequantized in the graph. A function compiled ahead of time from
    templates (`Nx.Defn.compile/3`, `Nx.Serving`) compiles another graph
    at its first run with quantized arguments.

    Compiled graphs are cached by the function, the input types and shapes
    (and which inputs are quantized, how) and these options
    (`clear_cache/0` empties the cache). Runs of one
    compiled graph are serialized; concurrent callers of the same function
    wait for each other (`Nx.Serving` partitions each compile their own).
    """

    @behaviour Nx.Defn.Compiler

    alias Nx.Defn.{Composite, Expr, Tree}

    @compiler_keys [:device, :dot_precision, :compiler_fallback, :optimize, :patterns, :save_graph]

    # the engine's pattern counts (emily_graph_stats) by telemetry name
    @patterns [
      layer_norm: :pattern_layer_norm,
      rms_norm: :pattern_rms_norm,
      softmax: :pattern_softmax,
      attention: :pattern_attention
    ]

    # Expressions the graph does not hold: side effects and Elixir
    # functions.
    @unsupported [:token, :attach_token, :runtime_call, :fun]

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
      {args_list, layouts} = read_args(args_list)
      compile(key, vars, fun, opts, layouts).(args_list)
    end

    # The arguments read once (each a function that returns the value it
    # read), to see which are quantized; and their quantized layouts.
    defp read_args(args_list) do
      args_list = Enum.map(args_list, fn args -> Enum.map(args, &eager(&1.())) end)

      layouts =
        case args_list do
          [first | _] -> quantized_layouts(first)
          [] -> %{}
        end

      {args_list, layouts}
    end

    defp eager(value), do: fn -> value end

    # %{flat parameter index => {bits, group_size, transposed?}} for the
    # quantized matrices among the (flattened) arguments
    defp quantized_layouts(args) do
      for {arg, i} <- Enum.with_index(args),
          layout = quantized_layout(arg.()),
          into: %{},
          do: {i, layout}
    end

    defp quantized_layout(%Nx.Tensor{data: %Emily.Backend{ref: {:quantized, w, transposed?}}}),
      do: {w.bits, w.group_size, transposed?}

    defp quantized_layout(_), do: nil

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

    # Compiled from templates (Nx.Defn.compile/3, Nx.Serving), which cannot
    # say whether an argument will be quantized: the graph for plain
    # arguments now; the first run with quantized ones compiles (and
    # caches) a graph for them.
    @impl true
    def __compile__(key, vars, fun, opts) do
      plain = compile(key, vars, fun, opts, %{})

      fn args_list ->
        {args_list, layouts} = read_args(args_list)

        if layouts == %{},
          do: plain.(args_list),
          else: compile(key, vars, fun, opts, layouts).(args_list)
      end
    end

    defp compile(key, vars, fun, opts, layouts) do
      {copts, _} = Keyword.split(opts, [:hooks | @compiler_keys])
      cache_key = {__MODULE__, key, templates(vars), copts, layouts}

      case :persistent_term.get(cache_key, nil) do
        nil ->
          runner = build(key, vars, fun, opts, layouts)
          :persistent_term.put(cache_key, runner)
          runner

        runner ->
          runner
      end
    end

    @doc "Empties the cache of compiled graphs."
    def clear_cache do
      for {{__MODULE__, _, _, _, _} = key, _} <- :persistent_term.get(),
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

    # EMILY_SAVE_GRAPH_DIR=dir: every graph compiled is also saved there,
    # named by its size and a counter (for build/emily_run)
    defp env_graph_path(stats) do
      case System.get_env("EMILY_SAVE_GRAPH_DIR") do
        dir when dir in [nil, ""] ->
          nil

        dir ->
          File.mkdir_p!(dir)
          n = System.unique_integer([:positive, :monotonic])
          Path.join(dir, "graph-#{n}-#{stats.params}p-#{stats.calls}c.emg")
      end
    end

    # The arguments as the cache sees them: each tensor's type, shape,
    # names and vectorized axes, inside its container's structure, so that
    # containers whose `keep` fields differ (compile-time values the traced
    # function reads, Emily.MixedPrecision.LossScale's options for one)
    # get graphs of their own.
    defp templates(vars) do
      Enum.map(vars, fn var -> Composite.traverse(var, &template_key/1) end)
    end

    defp template_key(%Nx.Tensor{} = t),
      do: {t.type, t.shape, t.names, Map.get(t, :vectorized_axes, [])}

    defp template_key(other), do: other

    defp evaluator_opts(opts), do: Keyword.drop(opts, @compiler_keys)

    ## Building

    defp build(key, vars, fun, opts, layouts) do
      fallback = Keyword.get(opts, :compiler_fallback, :eval)

      unless fallback in [:eval, :raise] do
        raise ArgumentError,
              "Emily.Compiler: :compiler_fallback must be :eval or :raise, got: #{inspect(fallback)}"
      end

      device = Emily.device!(Keyword.get_lazy(opts, :device, &default_device/0))
      precision = opts[:dot_precision] && Emily.validate_dot_precision!(opts[:dot_precision])

      previous_hooks = Process.put(Emily.Compiler.Hooks, Keyword.get(opts, :hooks, %{}))

      traced =
        try do
          trace(key, vars, fun, device, precision, layouts)
        after
          if previous_hooks,
            do: Process.put(Emily.Compiler.Hooks, previous_hooks),
            else: Process.delete(Emily.Compiler.Hooks)
        end

      case traced do
        {:ok, graph, outputs} ->
          :ok =
            Emily.Native.ok!(
              Emily.Native.graph_compile(
                graph,
                device,
                Keyword.get(opts, :optimize, true),
                Keyword.get(opts, :patterns, true)
              )
            )

          stats = Emily.Native.graph_stats(graph)

          :telemetry.execute(
            [:emily, :compiler, :compile],
            %{calls: stats.calls, steps: stats.steps},
            stats
          )

          for {pattern, key} <- @patterns, (count = Map.fetch!(stats, key)) > 0 do
            :telemetry.execute([:emily, :compiler, :pattern], %{count: count}, %{pattern: pattern})
          end

          if path = opts[:save_graph] || env_graph_path(stats),
            do: Emily.Native.ok!(Emily.Native.graph_save(graph, path))

          graph_runner(graph, outputs, device, layouts)

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

    defp graph_runner(graph, {result_template, output_specs}, device, layouts) do
      fn args_list ->
        for params <- args_list do
          tensors =
            params
            |> Enum.with_index()
            |> Enum.flat_map(fn {param, i} -> graph_inputs(param.(), layouts[i], device) end)

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

    # the device of the default backend when it is Emily's (what a user who
    # set Nx.default_backend({Emily.Backend, device: :cuda}) means)
    defp default_device do
      case Nx.default_backend() do
        {Emily.Backend, backend_opts} -> Keyword.get(backend_opts, :device, :cpu)
        _ -> :cpu
      end
    end

    # The graph's parameters for one argument: a quantized matrix compiled
    # as one is its packed codes, scales and biases; everything else is
    # one tensor (a quantized matrix dequantized)
    defp graph_inputs(value, nil, device), do: [to_emily(value, device)]

    defp graph_inputs(value, layout, device) do
      case value do
        %Nx.Tensor{data: %Emily.Backend{ref: {:quantized, w, _}}} = q ->
          if quantized_layout(q) != layout do
            raise ArgumentError,
                  "Emily.Compiler: this function was compiled for a quantized argument " <>
                    "#{inspect(layout)} ({bits, group_size, transposed?}), got one quantized " <>
                    inspect(quantized_layout(q))
          end

          Enum.map([w.packed, w.scales, w.biases], &to_emily(&1, device))

        other ->
          raise ArgumentError,
                "Emily.Compiler: this function was compiled for a quantized argument, got " <>
                  inspect(Nx.to_template(other))
      end
    end

    defp to_emily(%Nx.Tensor{data: %Emily.Backend{ref: {:quantized, _, _}}} = q, device),
      do: q |> Emily.Backend.dequantized() |> to_emily(device)

    defp to_emily(%Nx.Tensor{data: %Emily.Backend{}} = t, device) do
      t = Nx.devectorize(t)

      if Emily.Backend.device(t) == device,
        do: t,
        else: Nx.backend_copy(t, {Emily.Backend, device: device})
    end

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

    defp trace(key, vars, fun, device, precision, layouts) do
      expr = fun.(vars)

      with :ok <- check_vars(vars),
           :ok <- check_expr(expr) do
        record(key, vars, expr, device, precision, layouts)
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

    defp record(_key, vars, expr, device, precision, layouts) do
      {:ok, graph} = Emily.Native.graph_new()

      params =
        vars
        |> Composite.flatten_list()
        |> Enum.with_index()
        |> Enum.map(fn {var, i} -> graph_param(graph, Nx.devectorize(var), layouts[i]) end)
        |> List.to_tuple()

      # the outputs as the evaluator returns them: devectorized values put
      # into the (possibly vectorized) templates
      template = Composite.traverse(expr, &Nx.to_template/1)
      expr = Composite.traverse(expr, &Nx.devectorize/1)

      run = fn -> Emily.Compiler.Trace.eval_in(graph, expr, params, device) end
      run = if precision, do: fn -> Emily.with_dot_precision(precision, run) end, else: run

      try do
        result = Nx.with_default_backend({Emily.Backend, device: device}, run)
        {ids, specs} = output_specs(graph, result)
        :ok = Emily.Native.ok!(Emily.Native.graph_outputs(graph, ids))
        {:ok, graph, {template, specs}}
      rescue
        e -> {:fallback, Exception.message(e)}
      catch
        {:unsupported, op} -> {:fallback, "the expression has #{inspect(op)}"}
      end
    end

    defp graph_param(graph, var, nil) do
      {:ok, id} = Emily.Native.graph_param(graph, var.type, var.shape)
      %{var | data: %Emily.Backend{ref: {:graph, id}}}
    end

    # a quantized matrix: its parts are three parameters of the graph
    defp graph_param(graph, %Nx.Tensor{shape: {r, c}} = var, {bits, gs, transposed?}) do
      {n, k} = if transposed?, do: {c, r}, else: {r, c}
      groups = div(k, gs)

      part = fn type, shape ->
        {:ok, id} = Emily.Native.graph_param(graph, type, shape)

        %Nx.Tensor{
          type: type,
          shape: shape,
          names: [nil, nil],
          data: %Emily.Backend{ref: {:graph, id}}
        }
      end

      weight = %Emily.Quantization.Weight{
        packed: part.({:u, 8}, {n, div(k * bits, 8)}),
        scales: part.(var.type, {n, groups}),
        biases: part.(var.type, {n, groups}),
        bits: bits,
        group_size: gs,
        shape: {n, k}
      }

      %{var | data: %Emily.Backend{ref: {:quantized, weight, transposed?}}}
    end

    defp output_specs(_graph, result) do
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
    alias Nx.Defn.{Composite, Expr, Tree}

    # Ops the graph does not hold (Emily.Compiler falls back on them; the
    # caller scanned the expression for them first).
    @unsupported [:token, :attach_token, :runtime_call, :fun]
    @creation_ops [:eye, :iota, :from_binary]

    @doc false
    # Evaluates a (devectorized) expression composite as Nx.Defn.Evaluator
    # would, with every backend callback recorded into `graph`: the
    # parameters are graph values, and `while` becomes a loop of the graph
    # whose condition and body are graphs of their own.
    def eval_in(graph, expr, params, device) do
      previous = Process.put(__MODULE__, graph)

      try do
        state = %{params: params, cache: %{}, device: device, graph: graph, parent: nil}
        {result, _} = composite_eval(expr, state)
        # a quantized argument returned as it is: its matrix, dequantized
        Composite.traverse(result, &plain/1)
      after
        if previous, do: Process.put(__MODULE__, previous), else: Process.delete(__MODULE__)
      end
    end

    defp composite_eval(composite, state), do: Composite.traverse(composite, state, &eval/2)

    defp plain(%Nx.Tensor{data: %Emily.Backend{ref: {:quantized, _, _}}} = q),
      do: Emily.Backend.dequantized(q)

    defp plain(other), do: other

    defp eval(%Nx.Tensor{data: %Expr{op: :tensor, args: [t]}}, state), do: {t, state}

    defp eval(%Nx.Tensor{data: %Expr{op: :constant, args: [c]}} = ans, state),
      do: {Emily.Backend.constant(ans, c, device: state.device), state}

    defp eval(%Nx.Tensor{data: %Expr{id: id, op: op}} = ans, state) do
      case state.cache do
        %{^id => res} ->
          {res, state}

        %{} ->
          # in a cond's branch, a value the enclosing graphs already have
          # becomes a parameter of the branch
          {res, state} =
            case lookup_outer(id, state) do
              {:ok, res} -> {res, state}
              :error -> eval_op(op, ans, state)
            end

          {res, %{state | cache: Map.put(state.cache, id, res)}}
      end
    end

    defp eval(other, state), do: {other, state}

    defp eval_op(:parameter, %{data: %Expr{args: [i]}}, state), do: {resolve_param(i, state), state}

    # the wrapped expression may be a tuple (custom_grad of several results)
    defp eval_op(:metadata, %{data: %Expr{args: [expr, _meta]}}, state),
      do: composite_eval(expr, state)

    defp eval_op(:elem, %{data: %Expr{args: [tuple, i]}}, state) do
      {tuple, state} = composite_eval(tuple, state)
      {elem(tuple, i), state}
    end

    defp eval_op(:while, %{data: %Expr{args: [initial, arg, pred, block]}}, state) do
      {initial, state} = composite_eval(initial, state)

      ids =
        initial |> List.wrap() |> Composite.flatten_list() |> Enum.map(&value_id(state.graph, &1))

      cond_graph = sub_graph(arg, pred, state)
      body_graph = sub_graph(arg, block, state)
      {:ok, first} = Native.ok!(Native.graph_while(state.graph, cond_graph, body_graph, ids))
      {graph_values(initial, first), state}
    end

    # Nx 0.7: a callback Emily.Backend may lack runs Nx's default expression
    defp eval_op(:optional, %{data: %Expr{args: [call, expr, _callback]}}, state) do
      {args, state} = Tree.apply_args(call, state, &eval/2)
      name = call.data.op

      if function_exported?(Emily.Backend, name, length(args) + 1) do
        out = if match?({:tuple, _}, call.type), do: expr, else: call
        {apply(Emily.Backend, name, [out | args]), state}
      else
        params = args |> Enum.filter(&is_struct(&1, Nx.Tensor)) |> List.to_tuple()
        {res, _} = composite_eval(expr, %{state | params: params, cache: %{}})
        {res, state}
      end
    end

    # Nx 0.13: Nx.block structs go to Emily.Backend.block/4 (a native
    # callback, or the block's own function of other callbacks)
    defp eval_op(:block, %{data: %Expr{args: [struct, in_args, expr, callback]}} = ans, state) do
      {in_args, state} = Enum.map_reduce(in_args, state, &eval/2)
      out = if match?({:tuple, _}, ans.type), do: expr, else: ans
      {Emily.Backend.block(struct, out, in_args, callback), state}
    end

    # Nx's cond: the predicates are computed here (they are scalars of
    # this scope), each clause's body and the last body become branch
    # graphs whose parameters are the values they capture from here.
    defp eval_op(:cond, %{data: %Expr{args: [clauses, last]}}, state) do
      {preds, state} =
        Enum.map_reduce(clauses, state, fn {pred, _body}, state -> eval(pred, state) end)

      pred_ids = Enum.map(preds, &value_id(state.graph, &1))
      branches = Enum.map(clauses, &elem(&1, 1)) ++ [last]
      traced = Enum.map(branches, &branch_graph(&1, state))
      graphs = Enum.map(traced, &elem(&1, 0))
      counts = Enum.map(traced, &length(elem(&1, 1)))
      captured = Enum.flat_map(traced, &elem(&1, 1))
      {:ok, first} = Native.ok!(Native.graph_cond(state.graph, pred_ids, graphs, counts, captured))
      {_, _, shape} = List.last(traced)
      {graph_values(shape, first), state}
    end

    # A hook with no function (a name nobody gave a function for, in the
    # compiler's :hooks or the hook itself) does nothing: its value passes
    # through. One with a function needs the value on the host at run
    # time: the evaluator runs such defns.
    defp eval_op(:hook, %{data: %Expr{args: [tensor_expr, spec, template, _ref]}}, state) do
      if hook_fun(spec, Process.get(Emily.Compiler.Hooks, %{})), do: throw({:unsupported, :hook})
      {value, state} = composite_eval(tensor_expr, state)

      result =
        case template do
          %Nx.Tensor{} -> value
          _ -> value |> List.wrap() |> Composite.flatten_list() |> List.to_tuple()
        end

      {result, state}
    end

    defp eval_op(op, _ans, _state) when op in @unsupported, do: throw({:unsupported, op})

    defp eval_op(op, ans, state) do
      {args, state} = Tree.apply_args(ans, state, &eval/2)

      args =
        cond do
          op in @creation_ops -> [ans | args] ++ [[device: state.device]]
          match?({:tuple, _}, ans.type) -> args
          true -> [ans | args]
        end

      {apply(Emily.Backend, op, args), state}
    end

    # The outputs of a while or cond node: tensors shaped like `template`'s
    # whose values are the graph's, numbered from `first`.
    defp graph_values(template, first) do
      {result, _} =
        Composite.traverse(template, first, fn t, k ->
          {%{t | data: %Emily.Backend{ref: {:graph, k}}}, k + 1}
        end)

      result
    end

    defp branch_graph(body, state) do
      {:ok, sub} = Native.graph_new()
      key = {__MODULE__, :captures, make_ref()}
      Process.put(key, {sub, [], %{}})

      bstate = %{
        state
        | graph: sub,
          cache: %{},
          params: {:branch, key, state},
          parent: {key, state}
      }

      previous = Process.put(__MODULE__, sub)

      try do
        {result, _} = composite_eval(body, bstate)
        ids = [result] |> Composite.flatten_list() |> Enum.map(&value_id(sub, &1))
        :ok = Native.ok!(Native.graph_outputs(sub, ids))
        {^sub, captured, _} = Process.get(key)
        {sub, Enum.reverse(captured), result}
      after
        Process.delete(key)
        if previous, do: Process.put(__MODULE__, previous), else: Process.delete(__MODULE__)
      end
    end

    # A value of an enclosing graph (cached there under this expression
    # id), as a parameter of this branch; :error where no enclosing graph
    # has it (the branch computes it itself).
    defp lookup_outer(_id, %{parent: nil}), do: :error

    defp lookup_outer(id, %{parent: {key, pstate}}) do
      {_sub, _captured, memo} = Process.get(key)

      case memo do
        %{^id => t} ->
          {:ok, t}

        %{} ->
          found =
            case pstate.cache do
              %{^id => t} -> {:ok, t}
              %{} -> lookup_outer(id, pstate)
            end

          with {:ok, t} <- found, do: {:ok, capture(key, id, t)}
      end
    end

    defp resolve_param(i, %{params: params}) when is_tuple(params) and elem(params, 0) != :branch,
      do: elem(params, i)

    defp resolve_param(i, %{params: {:branch, key, pstate}}) do
      {_sub, _captured, memo} = Process.get(key)

      case memo do
        %{{:param, ^i} => t} -> t
        %{} -> capture(key, {:param, i}, resolve_param(i, pstate))
      end
    end

    # outer: a value of the enclosing graph (a tensor, or a tuple of them
    # for a tuple-valued expression)
    defp capture(key, memo_key, outer) do
      {sub, captured, memo} = Process.get(key)

      {inner, captured} = Composite.traverse(outer, captured, &capture_value(sub, &1, &2))

      Process.put(key, {sub, captured, Map.put(memo, memo_key, inner)})
      inner
    end

    defp capture_value(sub, %Nx.Tensor{data: %Emily.Backend{ref: {:graph, id}}} = t, captured) do
      {:ok, pid} = Native.graph_param(sub, t.type, t.shape)
      {%{t | data: %Emily.Backend{ref: {:graph, pid}}}, [id | captured]}
    end

    # a quantized matrix: each of its parts
    defp capture_value(sub, %Nx.Tensor{data: %Emily.Backend{ref: {:quantized, w, tr}}} = q, acc) do
      {[p, s, b], acc} =
        Enum.map_reduce([w.packed, w.scales, w.biases], acc, &capture_value(sub, &1, &2))

      w = %{w | packed: p, scales: s, biases: b}
      {%{q | data: %Emily.Backend{ref: {:quantized, w, tr}}}, acc}
    end

    defp capture_value(_sub, other, captured), do: {other, captured}

    defp hook_fun({:fn, fun}, _hooks), do: fun
    defp hook_fun({:named, name, callback}, hooks), do: hooks[name] || callback
    defp hook_fun({:token_hook, _hooked, inner}, hooks), do: hook_fun(inner, hooks)
    defp hook_fun(_other, _hooks), do: :unknown

    # A loop's condition or body: a graph whose parameters are the state
    defp sub_graph(arg, expr, state) do
      {:ok, sub} = Native.graph_new()

      params =
        arg
        |> List.wrap()
        |> Composite.flatten_list()
        |> Enum.map(fn %Nx.Tensor{data: %Expr{op: :parameter, args: [i]}} = p ->
          {:ok, id} = Native.graph_param(sub, p.type, p.shape)
          {i, %{p | data: %Emily.Backend{ref: {:graph, id}}}}
        end)
        |> Enum.sort()
        |> Enum.map(&elem(&1, 1))
        |> List.to_tuple()

      result = eval_in(sub, expr, params, state.device)
      ids = [result] |> Composite.flatten_list() |> Enum.map(&value_id(sub, &1))
      :ok = Native.ok!(Native.graph_outputs(sub, ids))
      sub
    end

    defp value_id(_graph, %Nx.Tensor{data: %Emily.Backend{ref: {:graph, id}}}), do: id

    # a quantized matrix in a loop's state: its dequantized matrix
    defp value_id(graph, %Nx.Tensor{data: %Emily.Backend{ref: {:quantized, _, _}}} = q),
      do: value_id(graph, Emily.Backend.dequantized(q))

    defp value_id(graph, %Nx.Tensor{} = t) do
      t =
        if match?(%Emily.Backend{}, t.data) or match?(%Nx.BinaryBackend{}, t.data),
          do: t,
          else: Nx.backend_copy(t, Emily.Backend)

      {:ok, id} = Native.ok!(Native.graph_const(graph, t))
      id
    end

    defp value_id(graph, number) when is_number(number),
      do: value_id(graph, Nx.tensor(number, backend: Nx.BinaryBackend))

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

    # a quantized matrix where the graph needs plain values: its
    # dequantize, recorded in the graph
    defp import_foreign(%Nx.Tensor{data: %Emily.Backend{ref: {:quantized, _, _}}} = q),
      do: Emily.Backend.dequantized(q)

    defp import_foreign(%Nx.Tensor{data: %Emily.Backend{}} = t), do: t
    defp import_foreign(%Nx.Tensor{data: %Nx.BinaryBackend{}} = t), do: t
    defp import_foreign(%Nx.Tensor{} = t), do: Nx.backend_copy(t, Emily.Backend)
    defp import_foreign(list) when is_list(list), do: Enum.map(list, &import_foreign/1)

    defp import_foreign(tuple) when is_tuple(tuple),
      do: tuple |> Tuple.to_list() |> import_foreign() |> List.to_tuple()

    defp import_foreign(other), do: other
  end
end

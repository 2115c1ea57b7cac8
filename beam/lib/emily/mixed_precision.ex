if Code.ensure_loaded?(Nx) do
  defmodule Emily.MixedPrecision do
    @moduledoc """
    Mixed-precision training in plain Nx: f32 master weights, the forward
    and backward passes in bf16 (or f16), dynamic loss scaling with
    overflow detection, and an optimizer step on the masters; one
    function, `train_step/4`, to call inside `Nx.Defn.jit/2`, on any
    backend and compiler (`Emily.Backend` and `Emily.Compiler` here).

        opts = [compute: :bf16, optimizer: Emily.MixedPrecision.sgd(0.05, momentum: 0.9)]
        state = Emily.MixedPrecision.init(params, [loss_scale: :dynamic] ++ opts)

        step =
          Nx.Defn.jit(
            fn state, batch -> Emily.MixedPrecision.train_step(state, batch, &loss/2, opts) end,
            compiler: Emily.Compiler
          )

        {state, %{loss: loss, grads_finite: ok}} = step.(state, batch)

    `loss/2` is the user's loss, `loss_fn.(params, batch)`, a `defn` (or
    any function of Nx operations) returning a scalar; it receives the
    parameters and the batch already cast to the compute type.

    ## The policy

      * **Masters**: `state.params` hold every float parameter in f32
        (`init/2` casts them; integer tensors are kept as they are).
      * **Compute**: each step casts the masters and the float tensors of
        the batch to the compute type (`:bf16`, `:f16`, or `:f32` for a
        plain f32 run), so the loss function's forward pass runs in it.
        The casts are `cast/2`, whose gradient casts back to the source
        type: the backward pass runs in the compute type too (a plain
        `Nx.as_type/2` would let Nx's f32 seed gradient turn the whole
        backward pass into f32), and the gradients reach the masters in
        f32.
      * **Outputs**: the loss is cast to f32 before it is scaled; compute
        numerically delicate outputs in f32 inside the loss function with
        `cast/2` (`softmax_cross_entropy/2` does, for its logits).
      * **Loss scaling** (`Emily.MixedPrecision.LossScale`): the f32 loss
        is multiplied by `S` before the backward pass and the f32
        gradients divided by `S`; `all_finite/1` checks every gradient for
        infinity and NaN in the same graph; a step with any non-finite
        gradient leaves the masters and the optimizer state unchanged
        (selected, not branched, so the step is one graph with no `cond`)
        and backs `S` off; `S` grows after `growth_interval` finite steps.
      * **Update**: `{updates, opt_state} = update_fn.(grads, opt_state,
        params)` on the f32 masters, `params + updates` (`sgd/2`, `adam/2`
        or any `{init_fn, update_fn}` pair with Polaris's convention).

    ## Exactness

    With `S` and the growth/backoff factors powers of two, scaling is
    exact: the gradients after unscaling are bit for bit those of the same
    step with `S = 1`, unless a scaled value overflows (then the step is
    skipped) or underflows. Against an f32 run, a bf16 step's gradients
    differ by bf16's rounding (Nx converts to bf16 by truncating the f32
    value: a relative error below 2^-7 per conversion), propagated
    through the model; `docs/mixed_precision.md` derives the bound for a
    dense layer and the tests check it. `Emily.Compiler` runs the step's
    graph with the evaluator's results on `Emily.Backend`, bit for bit
    (`softmax_cross_entropy/2` is a log-sum-exp, which no fused pattern of
    the compiler replaces).

    ## Devices

    Nothing here is device-specific: `device: :cuda` is an option of the
    backend (`Nx.default_backend({Emily.Backend, device: :cuda})`) and of
    the compiler (`Nx.Defn.jit(fun, compiler: Emily.Compiler, device:
    :cuda)`); the initial state's tensors should live on that device
    (`Nx.backend_transfer/2`).
    """

    alias Emily.MixedPrecision.{LossScale, Optimizers}
    alias Nx.Defn.Composite

    defmodule State do
      @moduledoc """
      The training state of `Emily.MixedPrecision`: `params` (the f32
      masters, any container), `optimizer_state` and `loss_scale` (an
      `Emily.MixedPrecision.LossScale`). An `Nx.Container`.
      """
      @derive {Nx.Container, containers: [:params, :optimizer_state, :loss_scale], keep: []}
      defstruct [:params, :optimizer_state, :loss_scale]
    end

    @compute_types %{bf16: {:bf, 16}, f16: {:f, 16}, f32: {:f, 32}}
    @master_type {:f, 32}

    @doc """
    The training state: the float tensors of `params` cast to f32, the
    optimizer's initial state and the loss scale. Options:

      * `optimizer` (required): `{init_fn, update_fn}`, e.g. `sgd/2`;
      * `loss_scale`: `:dynamic` (default), `:none`, `{:static, s}`,
        `{:dynamic, opts}` (see `Emily.MixedPrecision.LossScale.new/2`)
        or an `%Emily.MixedPrecision.LossScale{}`;
      * `compute` is accepted (and checked) so that one keyword list can
        serve `init/2` and `train_step/4`.
    """
    def init(params, opts) do
      opts = validate_opts!(opts, [:optimizer, compute: :bf16, loss_scale: :dynamic], :init)
      _ = compute_type!(opts[:compute])
      {init_fn, _update_fn} = optimizer!(opts[:optimizer])
      masters = Composite.traverse(params, &to_master/1)

      %State{
        params: masters,
        optimizer_state: init_fn.(masters),
        loss_scale: loss_scale!(opts[:loss_scale])
      }
    end

    @doc """
    One training step, for `Nx.Defn.jit/2` (or a `defn`): the loss and the
    gradients in the compute type, unscaled and checked in f32, the
    optimizer's update applied to the masters where every gradient is
    finite, the loss scale adjusted. Returns `{state, %{loss: loss,
    grads_finite: flag}}`: the unscaled f32 loss and a u8 scalar, 1 when
    the update was applied. Options: `compute` (`:bf16` default, `:f16`,
    `:f32`), `optimizer` (the pair given to `init/2`).
    """
    def train_step(%State{} = state, batch, loss_fn, opts) do
      opts = validate_opts!(opts, [:optimizer, compute: :bf16, loss_scale: :dynamic], :train_step)
      compute = compute_type!(opts[:compute])
      {_init_fn, update_fn} = optimizer!(opts[:optimizer])

      unless is_function(loss_fn, 2) do
        raise ArgumentError,
              "Emily.MixedPrecision.train_step: the loss function must take (params, batch), " <>
                "got #{inspect(loss_fn)}"
      end

      %State{params: params, optimizer_state: opt_state, loss_scale: ls} = state
      {loss, grads, finite} = value_and_grad(params, batch, loss_fn, ls, compute)
      {updates, new_opt_state} = update_fn.(grads, opt_state, params)
      new_params = Optimizers.zip_with(params, updates, &Nx.add/2)

      state = %State{
        params: keep_if(finite, new_params, params),
        optimizer_state: keep_if(finite, new_opt_state, opt_state),
        loss_scale: LossScale.adjust(ls, finite)
      }

      {state, %{loss: loss, grads_finite: finite}}
    end

    @doc """
    The parts of `train_step/4` before the update: `{loss, grads,
    finite}`, the f32 loss (unscaled), the f32 gradients of the masters
    (unscaled) and `all_finite(grads)`. `compute` is a type (`{:bf, 16}`)
    or one of `:bf16`, `:f16`, `:f32`.
    """
    def value_and_grad(params, batch, loss_fn, %LossScale{} = ls, compute) do
      compute = compute_type!(compute)

      {scaled, grads} =
        Nx.Defn.value_and_grad(params, fn params ->
          loss = loss_fn.(cast(params, compute), cast_batch(batch, compute))
          LossScale.scale(ls, cast(loss, @master_type))
        end)

      grads = LossScale.unscale(ls, Composite.traverse(grads, &Nx.as_type(&1, @master_type)))
      loss = Nx.divide(scaled, ls.scale)
      {loss, grads, all_finite(grads)}
    end

    @doc """
    Casts the float tensors of a container to `type` (integer tensors and
    numbers are kept). Inside a gradient its gradient is the incoming one
    cast back to the source type, so that the backward pass of a bf16
    forward pass runs in bf16 and a cast to f32 hands an f32 gradient to
    its f32 source only: use it, not `Nx.as_type/2`, to move between
    precisions inside a loss function.
    """
    def cast(tree, type) do
      type = Nx.Type.normalize!(type)
      Composite.traverse(tree, &cast_tensor(&1, type))
    end

    defp cast_tensor(t, to) when is_number(t), do: Nx.as_type(t, to)

    defp cast_tensor(%Nx.Tensor{type: from} = t, to) do
      cond do
        from == to or not float_type?(from) ->
          t

        match?(%Nx.Defn.Expr{}, t.data) ->
          Nx.Defn.Kernel.custom_grad(Nx.as_type(t, to), [t], fn g -> [Nx.as_type(g, from)] end)

        true ->
          Nx.as_type(t, to)
      end
    end

    # float tensors of the batch to the compute type; no gradient flows
    # into the batch, so a plain conversion
    defp cast_batch(batch, type) do
      Composite.traverse(batch, fn
        %Nx.Tensor{type: from} = t -> if float_type?(from), do: Nx.as_type(t, type), else: t
        number -> number
      end)
    end

    @doc """
    A u8 scalar: 1 when no tensor of the container holds an infinity or a
    NaN, else 0 (one reduction per tensor, combined in the same graph).
    """
    def all_finite(tree) do
      case Composite.flatten_list([tree]) do
        [] ->
          Nx.tensor(1, type: :u8)

        tensors ->
          tensors
          |> Enum.map(fn t -> Nx.any(Nx.logical_or(Nx.is_nan(t), Nx.is_infinity(t))) end)
          |> Enum.reduce(&Nx.logical_or/2)
          |> Nx.logical_not()
      end
    end

    @doc """
    The mean over the batch of softmax cross-entropy, computed in f32 from
    logits of any float type (cast with `cast/2`, so their gradient goes
    back in their type): `logits` `{..., classes}`, `labels` integer class
    ids of the shape of the logits without the last axis. A log-sum-exp
    shifted by the row's maximum.
    """
    def softmax_cross_entropy(logits, labels) do
      logits = cast(logits, @master_type)
      axis = Nx.rank(logits) - 1

      if Nx.shape(labels) != Tuple.delete_at(Nx.shape(logits), axis) do
        raise ArgumentError,
              "Emily.MixedPrecision.softmax_cross_entropy: labels must have the logits' shape " <>
                "without its last axis, #{inspect(Tuple.delete_at(Nx.shape(logits), axis))}, " <>
                "got #{inspect(Nx.shape(labels))}"
      end

      max = stop_grad(Nx.reduce_max(logits, axes: [axis], keep_axes: true))
      shifted = Nx.subtract(logits, max)
      log_sum = Nx.log(Nx.sum(Nx.exp(shifted), axes: [axis]))
      one_hot = Nx.equal(Nx.new_axis(labels, axis), Nx.iota(Nx.shape(logits), axis: axis))
      picked = Nx.sum(Nx.select(one_hot, shifted, 0.0), axes: [axis])
      Nx.mean(Nx.subtract(log_sum, picked))
    end

    defp stop_grad(%Nx.Tensor{data: %Nx.Defn.Expr{}} = t), do: Nx.Defn.Kernel.stop_grad(t)
    defp stop_grad(t), do: t

    @doc "SGD with momentum for the masters: `Emily.MixedPrecision.Optimizers.sgd/2`."
    defdelegate sgd(learning_rate, opts \\ []), to: Optimizers

    @doc "Adam for the masters: `Emily.MixedPrecision.Optimizers.adam/2`."
    defdelegate adam(learning_rate, opts \\ []), to: Optimizers

    ## Helpers

    # the new value where the step's gradients were finite, the old one
    # elsewhere (tensor by tensor, same structure)
    defp keep_if(finite, new, old) do
      Optimizers.zip_with(new, old, fn n, o -> Nx.select(finite, n, o) end)
    end

    defp to_master(t) when is_number(t), do: Nx.tensor(t, type: @master_type)

    defp to_master(%Nx.Tensor{type: type} = t) do
      if float_type?(type), do: Nx.as_type(t, @master_type), else: t
    end

    defp float_type?({kind, _}), do: kind in [:f, :bf]

    defp compute_type!(name) when is_atom(name) and is_map_key(@compute_types, name),
      do: Map.fetch!(@compute_types, name)

    defp compute_type!(type) when type in [{:bf, 16}, {:f, 16}, {:f, 32}], do: type

    defp compute_type!(other) do
      raise ArgumentError,
            "Emily.MixedPrecision: the compute type must be :bf16, :f16 or :f32, got " <>
              inspect(other)
    end

    defp optimizer!({init_fn, update_fn} = pair)
         when is_function(init_fn, 1) and is_function(update_fn, 3),
         do: pair

    defp optimizer!(other) do
      raise ArgumentError,
            "Emily.MixedPrecision: :optimizer must be {init_fn/1, update_fn/3} (e.g. " <>
              "Emily.MixedPrecision.sgd(0.01)), got #{inspect(other)}"
    end

    defp loss_scale!(%LossScale{} = ls), do: ls
    defp loss_scale!(:dynamic), do: LossScale.new(:dynamic)
    defp loss_scale!(:none), do: LossScale.new(:none)
    defp loss_scale!({:static, s}), do: LossScale.new(:static, scale: s)
    defp loss_scale!({:dynamic, opts}), do: LossScale.new(:dynamic, opts)

    defp loss_scale!(other) do
      raise ArgumentError,
            "Emily.MixedPrecision: :loss_scale must be :dynamic, :none, {:static, scale}, " <>
              "{:dynamic, opts} or an %Emily.MixedPrecision.LossScale{}, got #{inspect(other)}"
    end

    defp validate_opts!(opts, allowed, fun) do
      keys =
        Enum.map(allowed, fn
          {k, _} -> k
          k -> k
        end)

      case Keyword.keyword?(opts) && Keyword.validate(opts, allowed) do
        {:ok, opts} ->
          unless Keyword.has_key?(opts, :optimizer) and opts[:optimizer] != nil do
            raise ArgumentError, "Emily.MixedPrecision.#{fun}: the :optimizer option is required"
          end

          opts

        _ ->
          raise ArgumentError,
                "Emily.MixedPrecision.#{fun}: options must be a keyword list of " <>
                  "#{inspect(keys)}, got #{inspect(opts)}"
      end
    end
  end
end

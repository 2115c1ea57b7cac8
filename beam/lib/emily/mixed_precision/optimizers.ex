if Code.ensure_loaded?(Nx) do
  defmodule Emily.MixedPrecision.Optimizers do
    @moduledoc """
    Two optimizers for the f32 master weights of `Emily.MixedPrecision`,
    as `{init_fn, update_fn}` pairs (the convention Polaris's optimizers
    follow, so one of those can be passed instead):

      * `init_fn.(params)` gives the optimizer's state (a container of
        tensors, made eagerly by `Emily.MixedPrecision.init/2`);
      * `update_fn.(grads, state, params)` gives `{updates, state}`, and
        the new parameters are `params + updates`. It runs inside the
        training step's `defn`, on f32 gradients.

    Both are written with plain Nx operations and work on any backend.
    """

    alias Nx.Defn.Composite

    @doc """
    Stochastic gradient descent with (heavy-ball) momentum:
    `v = momentum * v + g`, `update = -learning_rate * v`. Options:
    `momentum` (0.9; 0 is plain SGD).
    """
    def sgd(learning_rate, opts \\ []) do
      learning_rate = learning_rate!(learning_rate, :sgd)
      opts = validate!(opts, [momentum: 0.9], :sgd)
      momentum = opts[:momentum]

      unless is_number(momentum) and momentum >= 0 and momentum < 1 do
        raise ArgumentError,
              "Emily.MixedPrecision.sgd: :momentum must be a number in [0, 1), got " <>
                inspect(momentum)
      end

      init = fn params -> %{velocity: zeros_like(params)} end

      update = fn grads, %{velocity: velocity}, _params ->
        velocity = zip_with(velocity, grads, fn v, g -> Nx.add(Nx.multiply(v, momentum), g) end)
        updates = Composite.traverse(velocity, &Nx.multiply(&1, -learning_rate))
        {updates, %{velocity: velocity}}
      end

      {init, update}
    end

    @doc """
    Adam with bias correction: `m = b1 m + (1 - b1) g`,
    `v = b2 v + (1 - b2) g^2`, `update = -learning_rate * m_hat /
    (sqrt(v_hat) + eps)`. Options: `b1` (0.9), `b2` (0.999), `eps` (1e-8).
    """
    def adam(learning_rate, opts \\ []) do
      learning_rate = learning_rate!(learning_rate, :adam)
      opts = validate!(opts, [b1: 0.9, b2: 0.999, eps: 1.0e-8], :adam)
      {b1, b2, eps} = {opts[:b1], opts[:b2], opts[:eps]}

      for {name, b} <- [b1: b1, b2: b2], not (is_number(b) and b >= 0 and b < 1) do
        raise ArgumentError,
              "Emily.MixedPrecision.adam: #{inspect(name)} must be a number in [0, 1), got " <>
                inspect(b)
      end

      unless is_number(eps) and eps > 0 do
        raise ArgumentError,
              "Emily.MixedPrecision.adam: :eps must be a positive number, got #{inspect(eps)}"
      end

      init = fn params ->
        %{mu: zeros_like(params), nu: zeros_like(params), count: Nx.tensor(0, type: :s32)}
      end

      update = fn grads, %{mu: mu, nu: nu, count: count}, _params ->
        mu = zip_with(mu, grads, fn m, g -> Nx.add(Nx.multiply(m, b1), Nx.multiply(g, 1 - b1)) end)

        nu =
          zip_with(nu, grads, fn v, g ->
            Nx.add(Nx.multiply(v, b2), Nx.multiply(Nx.multiply(g, g), 1 - b2))
          end)

        count = Nx.add(count, 1)
        t = Nx.as_type(count, :f32)
        correction1 = Nx.subtract(1, Nx.pow(b1, t))
        correction2 = Nx.subtract(1, Nx.pow(b2, t))

        updates =
          zip_with(mu, nu, fn m, v ->
            m_hat = Nx.divide(m, correction1)
            v_hat = Nx.divide(v, correction2)
            Nx.multiply(Nx.divide(m_hat, Nx.add(Nx.sqrt(v_hat), eps)), -learning_rate)
          end)

        {updates, %{mu: mu, nu: nu, count: count}}
      end

      {init, update}
    end

    @doc false
    # zeros of each tensor's shape and type
    def zeros_like(tree) do
      Composite.traverse(tree, fn t -> Nx.broadcast(Nx.tensor(0, type: Nx.type(t)), t) end)
    end

    @doc false
    # fun on the tensors of two containers of the same structure, pairwise;
    # the result has the first one's structure
    def zip_with(left, right, fun) do
      right = Composite.flatten_list([right])

      {result, []} = Composite.traverse(left, right, fn l, [r | rest] -> {fun.(l, r), rest} end)

      result
    end

    defp learning_rate!(lr, name) do
      unless is_number(lr) and lr > 0 do
        raise ArgumentError,
              "Emily.MixedPrecision.#{name}: the learning rate must be a positive number, got " <>
                inspect(lr)
      end

      lr
    end

    defp validate!(opts, defaults, name) do
      case Keyword.keyword?(opts) && Keyword.validate(opts, defaults) do
        {:ok, opts} ->
          opts

        _ ->
          raise ArgumentError,
                "Emily.MixedPrecision.#{name}: options must be a keyword list of " <>
                  "#{inspect(Keyword.keys(defaults))}, got #{inspect(opts)}"
      end
    end
  end
end

# An MNIST-size MLP (784 -> 256 -> 10) trained with Emily.MixedPrecision
# (bf16 forward and backward on f32 master weights, dynamic loss scaling)
# and, for comparison, in plain f32, on a synthetic data set made here: no
# download, the same data on every run.
#
#   cd beam && EMILY_NX_PATH=/path/to/nx/nx mix run examples/mixed_precision_mlp.exs
#   ... mix run examples/mixed_precision_mlp.exs --device cuda --epochs 5 --compute bf16,f16,f32
#
# The data: ten class prototypes of 784 "pixels" (each pixel on with
# probability 0.3); a sample of class c is 0.6 * prototype c + 0.4 *
# another class's prototype + Gaussian noise (sigma 0.6), clipped to
# [0, 1]. 8192 training samples, 2048 held out. Every step is one
# Emily.Compiler graph (Emily.MixedPrecision.train_step/4); the loss is
# the mean softmax cross-entropy, in f32.
{opts, _, _} =
  OptionParser.parse(System.argv(),
    strict: [device: :string, epochs: :integer, compute: :string, batch: :integer]
  )

device = String.to_atom(Keyword.get(opts, :device, "cpu"))
epochs = Keyword.get(opts, :epochs, 5)
batch_size = Keyword.get(opts, :batch, 128)

computes =
  opts |> Keyword.get(:compute, "f32,bf16") |> String.split(",") |> Enum.map(&String.to_atom/1)

Nx.default_backend({Emily.Backend, device: device})
alias Emily.MixedPrecision, as: MP

defmodule Example do
  @classes 10
  @features 784
  @hidden 256
  # a prototype's pixels are on with probability @density; a sample keeps
  # each of its class's pixels with probability @keep, at @weight, adds
  # another class's prototype at 1 - @weight and noise of deviation @sigma
  @density 0.3
  @keep 0.8
  @weight 0.7
  @sigma 1.0

  def prototypes(key) do
    {u, key} = Nx.Random.uniform(key, shape: {@classes, @features})
    {Nx.select(Nx.greater(u, 1 - @density), 1.0, 0.0), key}
  end

  def data(protos, key, n) do
    {labels, key} = Nx.Random.randint(key, 0, @classes, shape: {n}, type: :s32)
    {shift, key} = Nx.Random.randint(key, 1, @classes, shape: {n}, type: :s32)
    other = Nx.remainder(Nx.add(labels, shift), @classes)
    {keep, key} = Nx.Random.uniform(key, shape: {n, @features})
    {noise, key} = Nx.Random.normal(key, 0.0, @sigma, shape: {n, @features})

    x =
      Nx.take(protos, labels)
      |> Nx.multiply(Nx.select(Nx.less(keep, @keep), @weight, 0.0))
      |> Nx.add(Nx.multiply(Nx.take(protos, other), 1 - @weight))
      |> Nx.add(noise)
      |> Nx.clip(0.0, 1.0)

    {x, labels, key}
  end

  # Glorot-uniform kernels, zero biases (f32: init/2 keeps them as masters)
  def params(key) do
    {k0, key} = glorot(key, @features, @hidden)
    {k1, _key} = glorot(key, @hidden, @classes)

    %{
      "dense_0" => %{"kernel" => k0, "bias" => Nx.broadcast(0.0, {@hidden})},
      "dense_1" => %{"kernel" => k1, "bias" => Nx.broadcast(0.0, {@classes})}
    }
  end

  defp glorot(key, fan_in, fan_out) do
    limit = :math.sqrt(6 / (fan_in + fan_out))
    {w, key} = Nx.Random.uniform(key, -limit, limit, shape: {fan_in, fan_out}, type: :f32)
    {w, key}
  end

  def logits(p, x) do
    h = Nx.add(Nx.dot(x, p["dense_0"]["kernel"]), p["dense_0"]["bias"])
    h = Nx.max(h, 0)
    Nx.add(Nx.dot(h, p["dense_1"]["kernel"]), p["dense_1"]["bias"])
  end

  def loss(p, {x, y}), do: MP.softmax_cross_entropy(logits(p, x), y)

  # accuracy of the masters cast to the compute type, as the training
  # step's forward pass sees them
  def accuracy(p, x, y, compute) do
    pred = Nx.argmax(logits(MP.cast(p, compute), MP.cast(x, compute)), axis: 1)
    Nx.mean(Nx.equal(pred, y))
  end
end

key = Nx.Random.key(17)
{protos, key} = Example.prototypes(key)
{x_train, y_train, key} = Example.data(protos, key, 8192)
{x_test, y_test, key} = Example.data(protos, key, 2048)
init_params = Example.params(key)
steps = div(8192, batch_size)
jit_opts = [compiler: Emily.Compiler, device: device]

IO.puts(
  "device #{device}, #{epochs} epochs of #{steps} steps (batch #{batch_size}), " <>
    "SGD lr 0.05 momentum 0.9, dot precision #{Emily.dot_precision()}"
)

results =
  for compute <- computes do
    train_opts = [compute: compute, optimizer: MP.sgd(0.05, momentum: 0.9)]
    step = Nx.Defn.jit(fn s, b -> MP.train_step(s, b, &Example.loss/2, train_opts) end, jit_opts)
    eval = Nx.Defn.jit(&Example.accuracy(&1, &2, &3, compute), jit_opts)
    state = MP.init(init_params, train_opts)
    started = System.monotonic_time(:millisecond)

    state =
      Enum.reduce(1..epochs, state, fn epoch, state ->
        {state, total} =
          Enum.reduce(0..(steps - 1), {state, 0.0}, fn i, {state, total} ->
            batch =
              {Nx.slice_along_axis(x_train, i * batch_size, batch_size),
               Nx.slice_along_axis(y_train, i * batch_size, batch_size)}

            {state, m} = step.(state, batch)
            {state, total + Nx.to_number(m.loss)}
          end)

        acc = Nx.to_number(eval.(state.params, x_test, y_test))

        IO.puts(
          "#{compute} epoch #{epoch}: mean loss #{Float.round(total / steps, 4)}, " <>
            "held-out accuracy #{Float.round(100 * acc, 2)}%, loss scale " <>
            "#{Nx.to_number(state.loss_scale.scale)}, skipped steps " <>
            "#{Nx.to_number(state.loss_scale.skipped_steps)}"
        )

        state
      end)

    seconds = (System.monotonic_time(:millisecond) - started) / 1000
    acc = Nx.to_number(eval.(state.params, x_test, y_test))
    {compute, acc, seconds}
  end

for {compute, acc, seconds} <- results do
  IO.puts("#{compute}: final held-out accuracy #{Float.round(100 * acc, 2)}% (#{seconds} s)")
end

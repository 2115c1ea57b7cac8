if Code.ensure_loaded?(Nx) do
  defmodule Emily.MixedPrecision.LossScale do
    @moduledoc """
    The loss scale of `Emily.MixedPrecision`: a factor `S` the loss is
    multiplied by before the backward pass (so that small gradients do not
    underflow in f16) and the gradients are divided by afterwards, in f32.

        LossScale.new(:dynamic)                         # S = 2^15, grows and backs off
        LossScale.new(:dynamic, init_scale: 1024.0, growth_interval: 500)
        LossScale.new(:static, scale: 128.0)            # S fixed
        LossScale.new(:none)                            # S = 1

    An `Nx.Container`: `scale` (f32 scalar), `good_steps` (s32 scalar:
    finite steps since the last change of `S`) and `skipped_steps` (s32
    scalar: steps whose gradients were not finite, in total) are tensors
    that pass through `defn`; the options are kept as compile-time values.

    `adjust/2` is the dynamic rule, applied once per step to the flag
    "every gradient is finite":

      * not finite: the step is skipped (by the caller), `S` becomes
        `max(S * backoff_factor, min_scale)` and `good_steps` 0;
      * finite: `good_steps + 1`; when that reaches `growth_interval`,
        `S` becomes `min(S * growth_factor, max_scale)` and `good_steps` 0.

    A static (or `:none`) scale never changes; non-finite steps are still
    counted (and skipped by `Emily.MixedPrecision.train_step/4`).

    Options of `:dynamic` (defaults as in common practice):
    `init_scale` (2^15), `growth_interval` (2000 steps),
    `growth_factor` (2.0), `backoff_factor` (0.5), `min_scale` (1.0, the
    floor), `max_scale` (2^24, the cap). Scales and factors that are powers
    of two keep scaling exact: `(S * x) / S == x` bit for bit in every
    binary float type, unless `S * x` overflows or underflows.
    """

    @derive {Nx.Container,
             containers: [:scale, :good_steps, :skipped_steps],
             keep: [
               :dynamic,
               :growth_interval,
               :growth_factor,
               :backoff_factor,
               :min_scale,
               :max_scale
             ]}
    defstruct [
      :scale,
      :good_steps,
      :skipped_steps,
      dynamic: true,
      growth_interval: 2000,
      growth_factor: 2.0,
      backoff_factor: 0.5,
      min_scale: 1.0,
      max_scale: 16_777_216.0
    ]

    @dynamic_defaults [
      init_scale: 32_768.0,
      growth_interval: 2000,
      growth_factor: 2.0,
      backoff_factor: 0.5,
      min_scale: 1.0,
      max_scale: 16_777_216.0
    ]

    # the largest finite f32: a scale must be representable in it
    @f32_max 3.4028234663852886e38

    @doc """
    A loss scale: `new(:dynamic, opts)`, `new(:static, scale: s)` or
    `new(:none)`. Raises `ArgumentError` for an unknown type, an unknown
    option, a scale that is not a positive finite f32, a `growth_interval`
    that is not a positive integer, a `growth_factor` not above 1, a
    `backoff_factor` not in (0, 1), or `init_scale` outside
    `[min_scale, max_scale]`.
    """
    def new(type, opts \\ [])

    def new(:dynamic, opts) do
      opts = validate_opts!(opts, @dynamic_defaults, :dynamic)
      min = positive_scale!(opts[:min_scale], :min_scale)
      max = positive_scale!(opts[:max_scale], :max_scale)
      init = positive_scale!(opts[:init_scale], :init_scale)
      interval = opts[:growth_interval]

      unless is_integer(interval) and interval > 0 do
        raise ArgumentError,
              "Emily.MixedPrecision.LossScale: :growth_interval must be a positive integer " <>
                "(steps), got #{inspect(interval)}"
      end

      unless is_number(opts[:growth_factor]) and opts[:growth_factor] > 1 do
        raise ArgumentError,
              "Emily.MixedPrecision.LossScale: :growth_factor must be a number above 1, got " <>
                inspect(opts[:growth_factor])
      end

      unless is_number(opts[:backoff_factor]) and opts[:backoff_factor] > 0 and
               opts[:backoff_factor] < 1 do
        raise ArgumentError,
              "Emily.MixedPrecision.LossScale: :backoff_factor must be a number in (0, 1), got " <>
                inspect(opts[:backoff_factor])
      end

      unless min <= init and init <= max do
        raise ArgumentError,
              "Emily.MixedPrecision.LossScale: :init_scale #{init} must lie in " <>
                "[min_scale, max_scale] = [#{min}, #{max}]"
      end

      %__MODULE__{
        scale: Nx.tensor(init, type: :f32),
        good_steps: Nx.tensor(0, type: :s32),
        skipped_steps: Nx.tensor(0, type: :s32),
        dynamic: true,
        growth_interval: interval,
        growth_factor: opts[:growth_factor] * 1.0,
        backoff_factor: opts[:backoff_factor] * 1.0,
        min_scale: min,
        max_scale: max
      }
    end

    def new(:static, opts) do
      opts = validate_opts!(opts, [scale: 1.0], :static)
      fixed(positive_scale!(opts[:scale], :scale))
    end

    def new(:none, opts) do
      validate_opts!(opts, [], :none)
      fixed(1.0)
    end

    def new(other, _opts) do
      raise ArgumentError,
            "Emily.MixedPrecision.LossScale: the type must be :dynamic, :static or :none, got " <>
              inspect(other)
    end

    defp fixed(scale) do
      %__MODULE__{
        scale: Nx.tensor(scale, type: :f32),
        good_steps: Nx.tensor(0, type: :s32),
        skipped_steps: Nx.tensor(0, type: :s32),
        dynamic: false,
        min_scale: scale,
        max_scale: scale
      }
    end

    defp validate_opts!(opts, defaults, type) do
      unless Keyword.keyword?(opts) do
        raise ArgumentError,
              "Emily.MixedPrecision.LossScale: the options of #{inspect(type)} must be a " <>
                "keyword list, got #{inspect(opts)}"
      end

      case Keyword.validate(opts, defaults) do
        {:ok, opts} ->
          opts

        {:error, unknown} ->
          raise ArgumentError,
                "Emily.MixedPrecision.LossScale: unknown options #{inspect(unknown)} for " <>
                  "#{inspect(type)}; known: #{inspect(Keyword.keys(defaults))}"
      end
    end

    defp positive_scale!(value, name) do
      unless is_number(value) and value > 0 and value <= @f32_max do
        raise ArgumentError,
              "Emily.MixedPrecision.LossScale: #{inspect(name)} must be a positive finite " <>
                "number (an f32), got #{inspect(value)}"
      end

      value * 1.0
    end

    @doc "`loss * S`, in the loss's type (f32 in `Emily.MixedPrecision`)."
    def scale(%__MODULE__{scale: s}, loss), do: Nx.multiply(loss, Nx.as_type(s, Nx.type(loss)))

    @doc """
    Every gradient of the container `grads` divided by `S`, in its own
    type (f32 in `Emily.MixedPrecision`).
    """
    def unscale(%__MODULE__{scale: s}, grads) do
      Nx.Defn.Composite.traverse(grads, fn g -> Nx.divide(g, Nx.as_type(s, Nx.type(g))) end)
    end

    @doc """
    The loss scale after a step whose gradients were all finite or not
    (`finite`: a u8 scalar tensor, 1 or 0, as
    `Emily.MixedPrecision.all_finite/1` gives). Works in `defn` and
    eagerly.
    """
    def adjust(%__MODULE__{} = ls, finite) do
      finite = Nx.not_equal(finite, 0)
      overflow = Nx.logical_not(finite)
      skipped = Nx.add(ls.skipped_steps, Nx.as_type(overflow, :s32))
      good = Nx.multiply(Nx.add(ls.good_steps, 1), Nx.as_type(finite, :s32))

      if ls.dynamic do
        grow = Nx.logical_and(finite, Nx.greater_equal(good, ls.growth_interval))
        grown = Nx.min(Nx.multiply(ls.scale, ls.growth_factor), ls.max_scale)
        backed_off = Nx.max(Nx.multiply(ls.scale, ls.backoff_factor), ls.min_scale)
        scale = Nx.select(finite, Nx.select(grow, grown, ls.scale), backed_off)
        good = Nx.select(grow, 0, good)

        %{
          ls
          | scale: Nx.as_type(scale, :f32),
            good_steps: Nx.as_type(good, :s32),
            skipped_steps: skipped
        }
      else
        %{ls | good_steps: Nx.as_type(good, :s32), skipped_steps: skipped}
      end
    end
  end
end

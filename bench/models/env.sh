# bench/models/env.sh: the settings every bench/models script shares
# (sourced, not run). Override any of them in the environment.
_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export EMILY_REPO=${EMILY_REPO:-$(cd "$_here/../.." && pwd)}
export EMILY_MODELS_DEPS=${EMILY_MODELS_DEPS:-/work/deps}
DEPS=$EMILY_MODELS_DEPS
export EMILY_MODELS_APP=${EMILY_MODELS_APP:-$DEPS/models_app}
APP=$EMILY_MODELS_APP
export EMILY_MODELS_VENV=${EMILY_MODELS_VENV:-$DEPS/models_venv}
VENV=$EMILY_MODELS_VENV
export EMILY_MODELS_DATA=${EMILY_MODELS_DATA:-$DEPS/models_data}
DATA=$EMILY_MODELS_DATA
MIRROR=${EMILY_MIRROR:-/work/.mirror}
# Elixir 1.18 (Nx 0.13 needs >= 1.15) where it is built by hand
[ -x "${EMILY_ELIXIR_BIN:-$DEPS/elixir-1.18/bin}/elixir" ] &&
  export PATH=${EMILY_ELIXIR_BIN:-$DEPS/elixir-1.18/bin}:$PATH
# what Emily's mix.exs and the Makefile read: Nx by path, a CPU-only
# engine in its own build directory (relative to the repository root)
export EMILY_NX_PATH=$DEPS/nx-0.13.1/nx
export EMILY_COMPLEX_PATH=$DEPS/complex
export EMILY_TELEMETRY_PATH=$DEPS/telemetry
export EMILY_BUILD_DIR=${EMILY_BUILD_DIR:-build-models}
export CUDA=${CUDA:-0}
mkdir -p "$APP"
unset _here

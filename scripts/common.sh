# Shared helpers for scripts/*.sh (sourced, not run).

# section TITLE: a heading with the seconds since the script started, so that a log's tail tells
# where its time went.
section() {
  printf '\n==== %s (%ss) ====\n' "$*" "$SECONDS"
}

# Ninja's progress lines carry the seconds since its build started.
export NINJA_STATUS=${NINJA_STATUS:-"[%f/%t %es] "}

# configure_ninja BUILD_DIR [cmake args...]: configures with Ninja, starting the build directory
# afresh if an earlier configure used another generator.
configure_ninja() {
  local dir=$1
  shift
  if [ -f "$dir/CMakeCache.txt" ] &&
     ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$dir/CMakeCache.txt"; then
    echo "$dir was configured with another generator; starting it afresh"
    rm -rf "$dir"
  fi
  cmake -S . -B "$dir" -G Ninja "$@"
}

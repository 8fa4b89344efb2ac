#!/usr/bin/env bash
# A build without MPI (-DATTN_WITH_MPI=OFF) started by a launcher (mpirun's variables) says
# so in one line and exits 1; without a launcher it trains as ever. Usage: no_mpi_test.sh path/to/attn
set -uo pipefail
attn="$1"
source "$(dirname "$0")/../cli/lib.sh"
copy=(--task copy --steps 2 --batch 4 --emb 8 --hidden 8 --min-len 3 --max-len 5 --eval-samples 4 --threads 1)
expect 1 "this attn was built without MPI (-DATTN_WITH_MPI=OFF) but was started by mpirun" -- \
  env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 "$attn" train "${copy[@]}" --out "$work/mpi"
[[ ! -e "$work/mpi" ]] || fail "the refused run created its folder"
expect 0 "trained 2 steps" -- "$attn" train "${copy[@]}" --out "$work/plain"
finish "no-MPI build"

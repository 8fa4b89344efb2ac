#include "attn/distributed/communicator.h"

#include <cstdlib>
#include <cstring>

#include "attn/error.h"

namespace attn::distributed {

#if ATTN_WITH_MPI
// mpi_communicator.cpp
std::unique_ptr<Communicator> make_mpi_communicator();
int finish_mpi(int status);
#endif

namespace {

class DonePending final : public PendingReduce {
 public:
  void wait() override {}
  bool test() override { return true; }
};

std::unique_ptr<Communicator>& world_slot() {
  static std::unique_ptr<Communicator> world;
  return world;
}

}  // namespace

std::unique_ptr<PendingReduce> SingleProcessCommunicator::start_all_reduce_sum(std::span<float>) {
  return std::make_unique<DonePending>();
}

void SingleProcessCommunicator::all_gather(std::span<const std::byte> mine, std::span<std::byte> all) {
  std::memcpy(all.data(), mine.data(), mine.size());
}

bool launched_by_mpi() {
  // OpenMPI's mpirun, then PMI (MPICH's mpiexec, Slurm's srun) and PMIx.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

bool mpi_compiled_in() { return ATTN_WITH_MPI != 0; }

Communicator& world() {
  std::unique_ptr<Communicator>& w = world_slot();
  if (w) return *w;
  if (!launched_by_mpi()) {
    w = std::make_unique<SingleProcessCommunicator>();
    return *w;
  }
#if ATTN_WITH_MPI
  w = make_mpi_communicator();
#else
  throw ValueError(
      "this attn was built without MPI (-DATTN_WITH_MPI=OFF) but was started by mpirun: rebuild with "
      "libopenmpi-dev installed (scripts/install-deps.sh) and -DATTN_WITH_MPI=ON, or run it without mpirun");
#endif
  return *w;
}

int finish(int status) {
#if ATTN_WITH_MPI
  if (world_slot() && launched_by_mpi()) return finish_mpi(status);
#endif
  return status;
}

}  // namespace attn::distributed

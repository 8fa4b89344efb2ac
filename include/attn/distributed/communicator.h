#pragma once
// The processes of a data-parallel run and the collectives between them, after Marian's
// IMPIWrapper / FakeMPIWrapper: one interface, a single-process implementation (the
// default: nothing changes without mpirun) and an OpenMPI one (mpi_communicator.cpp,
// compiled with -DATTN_WITH_MPI=ON).
//
//   world()   the process's communicator: MPI's when launched by mpirun (the launcher's
//             OMPI_COMM_WORLD_SIZE / PMI_SIZE / PMIX_RANK variables), otherwise the single
//             process. Under mpirun without MPI compiled in: ValueError saying so.
//   finish()  the end of the program: MPI_Finalize, or MPI_Abort when this rank failed and
//             others are still running (so one rank's error, e.g. unreadable data, stops the
//             whole run at once instead of leaving the others waiting in a collective).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace attn::distributed {

// A non-blocking collective in flight; wait() returns when its result is in place.
// Once test() has returned true or wait() has returned, the collective is complete (MPI has
// freed its request): further test() calls return true and wait() returns at once, without
// calling MPI again.
class PendingReduce {
 public:
  virtual ~PendingReduce() = default;
  virtual void wait() = 0;
  // Lets the collective progress without blocking (MPI_Test); true when it is done.
  virtual bool test() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Processes of this run on this machine (OMPI_COMM_WORLD_LOCAL_SIZE): for the warning
  // about more threads than cores.
  virtual int local_size() const = 0;
  // values = Σ over ranks of every rank's values, in place; every rank gets the same sum.
  // The order of the additions is MPI's (it may depend on the rank count and message size).
  virtual void all_reduce_sum(std::span<float> values) = 0;
  virtual void all_reduce_sum(std::span<double> values) = 0;
  // The same, started now and finished by the returned request's wait().
  virtual std::unique_ptr<PendingReduce> start_all_reduce_sum(std::span<float> values) = 0;
  // all (size() × mine.size() bytes) = every rank's `mine`, in rank order.
  virtual void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
  // data = root's data on every rank.
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  virtual void barrier() = 0;
};

// One process: rank 0 of 1; the collectives leave the data as it is.
class SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_size() const override { return 1; }
  void all_reduce_sum(std::span<float>) override {}
  void all_reduce_sum(std::span<double>) override {}
  std::unique_ptr<PendingReduce> start_all_reduce_sum(std::span<float>) override;
  void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) override;
  void broadcast(std::span<std::byte>, int) override {}
  void barrier() override {}
};

// True when a launcher (mpirun, srun, mpiexec) started this process as one rank of several.
bool launched_by_mpi();
// True when this build has the OpenMPI communicator (-DATTN_WITH_MPI=ON).
bool mpi_compiled_in();
// The process's communicator (see above); created on the first call.
Communicator& world();
// The program's exit: MPI_Finalize when status is 0; MPI_Abort(status) when it is not and
// this is one rank of several. Returns status. Does nothing when MPI was never started.
int finish(int status);

}  // namespace attn::distributed

// The OpenMPI communicator (compiled with -DATTN_WITH_MPI=ON). MPI_COMM_WORLD with
// MPI_ERRORS_RETURN, so a failed collective is an attn::IoError naming the call rather
// than MPI's own abort; a rank that dies is reported by mpirun, which then stops the others.
#if ATTN_WITH_MPI
#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "attn/distributed/communicator.h"
#include "attn/error.h"

namespace attn::distributed {
namespace {

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw IoError(std::string(call) + " failed: " + std::string(text, static_cast<size_t>(length)));
}

int as_count(size_t n, const char* call) {
  if (n > static_cast<size_t>(INT_MAX))
    throw ValueError(std::string(call) + ": more than 2^31 elements in one message");
  return static_cast<int>(n);
}

class MpiPending final : public PendingReduce {
 public:
  MpiPending() = default;
  ~MpiPending() override {
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  MPI_Request* request() { return &request_; }
  // A completed request is freed by MPI (request_ becomes MPI_REQUEST_NULL); done_ keeps
  // the answer, so a later test() or wait() does not touch it again.
  void wait() override {
    if (done_) return;
    check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
    done_ = true;
  }
  bool test() override {
    if (done_) return true;
    int done = 0;
    check(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
    done_ = done != 0;
    return done_;
  }

 private:
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      int provided = 0;
      // Only the calling thread talks to MPI; OpenMP's threads compute.
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    local_size_ = local ? std::max(1, std::atoi(local)) : size_;
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_size() const override { return local_size_; }
  void all_reduce_sum(std::span<float> v) override {
    check(
        MPI_Allreduce(MPI_IN_PLACE, v.data(), as_count(v.size(), "MPI_Allreduce"), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
  }
  void all_reduce_sum(std::span<double> v) override {
    check(
        MPI_Allreduce(MPI_IN_PLACE, v.data(), as_count(v.size(), "MPI_Allreduce"), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
  }
  std::unique_ptr<PendingReduce> start_all_reduce_sum(std::span<float> v) override {
    auto pending = std::make_unique<MpiPending>();
    check(MPI_Iallreduce(MPI_IN_PLACE, v.data(), as_count(v.size(), "MPI_Iallreduce"), MPI_FLOAT, MPI_SUM,
                         MPI_COMM_WORLD, pending->request()),
          "MPI_Iallreduce");
    return pending;
  }
  void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    const int n = as_count(mine.size(), "MPI_Allgather");
    check(MPI_Allgather(mine.data(), n, MPI_BYTE, all.data(), n, MPI_BYTE, MPI_COMM_WORLD), "MPI_Allgather");
  }
  void broadcast(std::span<std::byte> data, int root) override {
    check(MPI_Bcast(data.data(), as_count(data.size(), "MPI_Bcast"), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

 private:
  int rank_ = 0, size_ = 1, local_size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

int finish_mpi(int status) {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised) return status;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // A failed rank takes the others down now: they may be waiting for it in a collective.
  if (status != 0 && size > 1) MPI_Abort(MPI_COMM_WORLD, status);
  MPI_Finalize();
  return status;
}

}  // namespace attn::distributed
#endif

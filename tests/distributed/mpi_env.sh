# Sourced by the tests/distributed scripts: mpirun on this machine only, as root too, with
# more ranks than cores allowed, and ranks that yield the core while they wait in a
# collective (OpenMPI polls otherwise, taking a core from the rank that is computing).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_plm_rsh_agent=false  # never try ssh: every rank is local
mpi2=(mpirun -np 2 --oversubscribe --bind-to none)

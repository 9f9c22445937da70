"""python -m kiln: the version, the executors this machine runs, and what this build has."""

import kiln


def main() -> None:
    info = kiln.build_info()
    print(f"kiln {kiln.__version__}")
    print(f"executors: {', '.join(kiln.executors())} (current: {kiln.current_executor()})")
    print(f"threads: {info['threads']}")
    devices = info["opencl_devices"]
    print(f"OpenCL: {', '.join(devices) if devices else 'no device found'}")
    print(f"MPI (kiln.distributed in C++): {'yes' if info['mpi'] else 'no'}")


if __name__ == "__main__":
    main()

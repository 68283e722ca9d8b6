"""The pycuda backend: one CUDA context in the worker process."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from cuopt.evaluate.backend import GpuError

# CUDA errors after which the context still works; everything else is treated as a fault.
_RECOVERABLE = ("too many resources", "invalid argument", "invalid configuration", "invalid value",
                "out of memory", "named symbol not found", "invalid image", "no kernel image",
                "invalid ptx", "unsupported ptx", "shared object")


class PycudaBackend:
    def __init__(self, device: int = 0) -> None:
        import pycuda.driver as drv  # deferred: pycuda needs the CUDA driver; it loads when a GPU is opened

        self.drv = drv
        drv.init()
        self.device = drv.Device(device)
        self.context = self.device.make_context()
        self._modules: list[Any] = []

    def _guard(self, exc: Exception) -> GpuError:
        msg = str(exc).strip() or type(exc).__name__
        return GpuError(msg, sticky=not any(s in msg.lower() for s in _RECOVERABLE))

    def _attr(self, name: str) -> int:
        """A device attribute; 0 when this pycuda or driver does not know it."""
        try:
            return int(self.device.get_attribute(getattr(self.drv.device_attribute, name)))
        except Exception:
            return 0

    def device_info(self) -> dict[str, Any]:
        attr = self._attr
        major, minor = self.device.compute_capability()
        return {
            "name": self.device.name(),
            "arch": f"sm_{major}{minor}",
            "sms": attr("MULTIPROCESSOR_COUNT"),
            "l2_bytes": attr("L2_CACHE_SIZE"),
            "memory_bytes": self.device.total_memory(),
            "max_shared_optin": attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
            "max_threads_per_sm": attr("MAX_THREADS_PER_MULTIPROCESSOR"),
            "max_registers_per_sm": attr("MAX_REGISTERS_PER_MULTIPROCESSOR"),
            "max_shared_per_sm": attr("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
            "clock_khz": attr("CLOCK_RATE"),  # maximum SM clock
            "driver": self.drv.get_driver_version(),
            "count": self.drv.Device.count(),  # GPUs this process sees
        }

    def load(self, cubin: str, symbol: str, arg_format: str, dynamic_shared: int) -> Any:
        try:
            module = self.drv.module_from_file(cubin)
            fn = module.get_function(symbol)
            if dynamic_shared > 48 * 1024:
                fn.set_attribute(self.drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_shared)
        except Exception as exc:  # pycuda raises its own hierarchy
            raise self._guard(exc) from None
        fn.prepare(arg_format)
        self._modules.append(module)
        return fn

    def alloc(self, nbytes: int) -> Any:
        try:
            return self.drv.mem_alloc(max(1, nbytes))
        except Exception as exc:
            raise self._guard(exc) from None

    def free(self, buf: Any) -> None:
        buf.free()

    def upload(self, buf: Any, host: np.ndarray) -> None:
        self._call(self.drv.memcpy_htod, buf, host)

    def download(self, buf: Any, host: np.ndarray) -> None:
        self._call(self.drv.memcpy_dtoh, host, buf)

    def copy(self, dst: Any, src: Any, nbytes: int) -> None:
        if nbytes:
            self._call(self.drv.memcpy_dtod_async, dst, src, nbytes, None)

    def fill(self, buf: Any, byte: int, nbytes: int) -> None:
        if nbytes:
            self._call(self.drv.memset_d8_async, buf, byte, nbytes, None)

    def launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int, args: Sequence[Any]) -> None:
        self._call(fn.prepared_call, tuple(grid), tuple(block), *args, shared_size=shared)

    def timed_launch(self, fn: Any, grid: Sequence[int], block: Sequence[int], shared: int,
                     args: Sequence[Any]) -> float:
        start, end = self.drv.Event(), self.drv.Event()
        start.record()
        self.launch(fn, grid, block, shared, args)
        end.record()
        self._call(end.synchronize)
        return start.time_till(end)

    def timed_copy(self, dst: Any, src: Any, nbytes: int) -> float:
        start, end = self.drv.Event(), self.drv.Event()
        start.record()
        self.copy(dst, src, nbytes)
        end.record()
        self._call(end.synchronize)
        return start.time_till(end)

    def synchronize(self) -> None:
        self._call(self.drv.Context.synchronize)

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise self._guard(exc) from None

    def close(self) -> None:
        try:
            self.context.pop()
            self.context.detach()
        except Exception:
            pass

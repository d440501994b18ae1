//! A memory kind the probe moves bytes from and to: host memory (page-aligned, `mlock`ed) or
//! CUDA device memory (`cuMemAlloc`). The transfer loop fills a buffer with a seeded pattern,
//! lets the fabric move it, and reads the destination back to check every byte.

use crate::analysis::probe_report::MemoryKind;

/// A dma-buf export of a buffer: the fd and the buffer's offset inside the exported range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaBuf {
    /// File descriptor from `cuMemGetHandleForAddressRange`.
    pub fd: i32,
    /// Offset of the buffer's first byte from the start of the exported range.
    pub offset: u64,
}

/// One buffer of some memory kind.
pub trait Buffer {
    /// Its memory kind.
    fn kind(&self) -> MemoryKind;
    /// Length in bytes.
    fn len(&self) -> usize;
    /// Whether it is empty (never, for a probe buffer).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The address to register with the NIC and to use as the RDMA virtual address: a host
    /// virtual address, or a CUDA device pointer.
    fn addr(&self) -> u64;
    /// Writes `bytes` at `offset` (bounds-checked).
    fn write_at(&mut self, offset: usize, bytes: &[u8]) -> Result<(), String>;
    /// Reads `out.len()` bytes from `offset` (bounds-checked).
    fn read_at(&self, offset: usize, out: &mut [u8]) -> Result<(), String>;
    /// A dma-buf fd for the whole buffer, or why there is none.
    fn dmabuf(&mut self) -> Result<DmaBuf, String> {
        Err(format!("{} memory is not exported as dma-buf", self.kind()))
    }
    /// Notes about how the buffer was obtained (e.g. `mlock` refused), for the report.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
    /// The CUDA ordinal the buffer lives on, for device memory.
    fn cuda_device(&self) -> Option<i32> {
        None
    }
    /// For device memory: whether the driver says the address is device memory
    /// (`cuPointerGetAttribute(MEMORY_TYPE) == DEVICE`), the evidence that the NIC moved
    /// GPU memory and not a host copy. `None` for host memory.
    fn is_device_memory(&self) -> Option<bool> {
        None
    }
}

/// A GPU runtime's devices and their PCI addresses, what the probe's plan needs of it
/// (`super::cuda::Cuda` answers from `cuDeviceGetPCIBusId`; ROCm's HIP answers the same for
/// `--memory hip`, `super::hip::Hip`).
pub trait CudaGpus {
    /// The runtime's name in notes (`CUDA`, `HIP`).
    fn name(&self) -> &'static str {
        "CUDA"
    }
    /// Number of CUDA devices.
    fn count(&self) -> usize;
    /// PCI address of a device, lower case (`0000:17:00.0`).
    fn pci_bus_id(&self, ordinal: usize) -> Result<String, String>;
    /// The ordinal of the GPU at a PCI address, if CUDA sees it.
    fn ordinal_of(&self, bdf: &str) -> Option<usize> {
        (0..self.count()).find(|&i| {
            self.pci_bus_id(i)
                .is_ok_and(|b| b.eq_ignore_ascii_case(bdf) || b.ends_with(bdf))
        })
    }
}

/// A GPU runtime the probe allocates device memory from: CUDA's driver
/// ([`super::cuda::Cuda`]) or ROCm's HIP ([`super::hip::Hip`]); the plan sees its devices
/// through [`CudaGpus`].
pub trait GpuRuntime: CudaGpus {
    /// `len` bytes of device memory on `ordinal`.
    fn alloc_buffer(&self, ordinal: usize, len: usize) -> Result<Box<dyn Buffer + '_>, String>;
}

impl GpuRuntime for super::cuda::Cuda {
    fn alloc_buffer(&self, ordinal: usize, len: usize) -> Result<Box<dyn Buffer + '_>, String> {
        Ok(Box::new(
            self.alloc(ordinal, len)
                .map_err(|e| format!("cuMemAlloc failed: {e}"))?,
        ))
    }
}

/// The plan's view of HIP: its devices and their `hipDeviceGetPCIBusId` addresses.
impl CudaGpus for super::hip::Hip {
    fn count(&self) -> usize {
        super::hip::Hip::count(self)
    }
    fn pci_bus_id(&self, ordinal: usize) -> Result<String, String> {
        super::hip::Hip::pci_bus_id(self, ordinal)
    }
    fn name(&self) -> &'static str {
        "HIP"
    }
}

impl GpuRuntime for super::hip::Hip {
    fn alloc_buffer(&self, ordinal: usize, len: usize) -> Result<Box<dyn Buffer + '_>, String> {
        Ok(Box::new(
            self.alloc(ordinal, len)
                .map_err(|e| format!("hipMalloc failed: {e}"))?,
        ))
    }
}

/// The pattern byte block for `seed` starting at absolute byte `offset` (multiple of 8).
fn pattern_word(seed: u64, index: u64) -> u64 {
    // splitmix64 of (seed, index): every 8-byte word differs, every seed differs.
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(index.wrapping_mul(0xBF58_476D_1CE4_E5B9))
        .wrapping_add(0x94D0_49BB_1331_11EB);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fills `out` with the pattern for `seed`, as if `out` started at byte `start` of the
/// pattern stream (`start` a multiple of 8).
pub fn pattern_fill(seed: u64, start: usize, out: &mut [u8]) {
    let base = (start / 8) as u64;
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let w = pattern_word(seed, base + i as u64).to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
}

/// Position of the first byte of `data` that differs from the pattern for `seed` starting at
/// `start`, or `None` when all match.
pub fn pattern_mismatch(seed: u64, start: usize, data: &[u8]) -> Option<usize> {
    let base = (start / 8) as u64;
    for (i, chunk) in data.chunks(8).enumerate() {
        let w = pattern_word(seed, base + i as u64).to_le_bytes();
        if chunk != &w[..chunk.len()] {
            let j = chunk
                .iter()
                .zip(w.iter())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            return Some(i * 8 + j);
        }
    }
    None
}

/// Fills a whole buffer with the pattern for `seed`, in 4 MiB pieces.
pub fn fill(buf: &mut dyn Buffer, seed: u64) -> Result<(), String> {
    let mut tmp = vec![0u8; (4 << 20).min(buf.len())];
    let mut off = 0;
    while off < buf.len() {
        let n = tmp.len().min(buf.len() - off);
        pattern_fill(seed, off, &mut tmp[..n]);
        buf.write_at(off, &tmp[..n])?;
        off += n;
    }
    Ok(())
}

/// Checks that `len` bytes at `offset` of `buf` hold the pattern for `seed` as it was written
/// at `src_offset` of the source. Returns the first mismatching byte offset (relative).
pub fn verify(
    buf: &dyn Buffer,
    offset: usize,
    len: usize,
    seed: u64,
    src_offset: usize,
) -> Result<Option<usize>, String> {
    let mut tmp = vec![0u8; (4 << 20).min(len.max(1))];
    let mut done = 0;
    while done < len {
        let n = tmp.len().min(len - done);
        buf.read_at(offset + done, &mut tmp[..n])?;
        if let Some(p) = pattern_mismatch(seed, src_offset + done, &tmp[..n]) {
            return Ok(Some(done + p));
        }
        done += n;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_roundtrip_and_mismatch() {
        let mut a = vec![0u8; 1000];
        pattern_fill(7, 64, &mut a);
        assert_eq!(pattern_mismatch(7, 64, &a), None);
        assert_eq!(pattern_mismatch(8, 64, &a), Some(0));
        a[517] ^= 1;
        assert_eq!(pattern_mismatch(7, 64, &a), Some(517));
        // Offsets line up: the tail of a block equals a block filled from a later start.
        let mut b = vec![0u8; 936];
        pattern_fill(7, 128, &mut b);
        a[517] ^= 1;
        assert_eq!(&a[64..], &b[..]);
    }
}

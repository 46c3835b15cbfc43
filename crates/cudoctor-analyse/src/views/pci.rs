//! GPUs by PCI address: the driver's kernel log, NVML and /proc spell one address differently.

/// (domain, bus, device) of a PCI address as the driver or NVML prints it: `0000:3b:00`,
/// `00000000:3B:00.0`, `3b:00`.
pub fn pci_key(address: &str) -> Option<(u32, u32, u32)> {
    let address = address.split('.').next()?;
    let parts: Vec<&str> = address.split(':').collect();
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    match parts.as_slice() {
        [domain, bus, device] => Some((hex(domain)?, hex(bus)?, hex(device)?)),
        [bus, device] => Some((0, hex(bus)?, hex(device)?)),
        _ => None,
    }
}

/// Whether `address` names the same GPU as `bus_id` (NVML's or /proc's spelling).
pub fn same_gpu(bus_id: Option<&str>, address: &str) -> bool {
    let key = bus_id.and_then(pci_key);
    key.is_some() && key == pci_key(address)
}

//! Byte builders for synthetic ELF files and fat binaries (tests only).

/// Builds a little-endian ELF file with the given sections.
pub(crate) struct ElfBuilder {
    is64: bool,
    sections: Vec<(String, u32, Vec<u8>)>,
}

impl ElfBuilder {
    pub fn new() -> Self {
        Self {
            is64: true,
            sections: Vec::new(),
        }
    }

    pub fn elf32(mut self) -> Self {
        self.is64 = false;
        self
    }

    pub fn section(mut self, name: &str, data: &[u8]) -> Self {
        self.sections.push((name.to_string(), 1, data.to_vec()));
        self
    }

    pub fn build(&self) -> Vec<u8> {
        let ehsize = if self.is64 { 64 } else { 52 };
        let mut out = vec![0u8; ehsize];
        let mut placed = Vec::new(); // (name offset, type, offset, size)
        let mut names = vec![0u8];
        for (name, ty, data) in &self.sections {
            pad8(&mut out);
            let name_off = names.len() as u32;
            names.extend_from_slice(name.as_bytes());
            names.push(0);
            placed.push((name_off, *ty, out.len() as u64, data.len() as u64));
            out.extend_from_slice(data);
        }
        let shstr_name = names.len() as u32;
        names.extend_from_slice(b".shstrtab\0");
        let shstr_off = out.len() as u64;
        out.extend_from_slice(&names);
        placed.push((shstr_name, 3, shstr_off, names.len() as u64));
        pad8(&mut out);
        let shoff = out.len() as u64;
        let entsize = if self.is64 { 64 } else { 40 };
        out.extend(std::iter::repeat_n(0u8, entsize)); // section 0: null
        for (name, ty, off, size) in &placed {
            let mut sh = vec![0u8; entsize];
            put32(&mut sh, 0, *name);
            put32(&mut sh, 4, *ty);
            if self.is64 {
                put64(&mut sh, 16, *off); // addr = offset
                put64(&mut sh, 24, *off);
                put64(&mut sh, 32, *size);
            } else {
                put32(&mut sh, 12, *off as u32);
                put32(&mut sh, 16, *off as u32);
                put32(&mut sh, 20, *size as u32);
            }
            out.extend_from_slice(&sh);
        }
        let shnum = (placed.len() + 1) as u16;
        let shstrndx = placed.len() as u16;
        out[..4].copy_from_slice(b"\x7fELF");
        out[4] = if self.is64 { 2 } else { 1 };
        out[5] = 1;
        out[6] = 1;
        put16(&mut out, 16, 3); // ET_DYN
        put16(&mut out, 18, 62);
        if self.is64 {
            put64(&mut out, 40, shoff);
            put16(&mut out, 52, 64);
            put16(&mut out, 58, 64);
            put16(&mut out, 60, shnum);
            put16(&mut out, 62, shstrndx);
        } else {
            put32(&mut out, 32, shoff as u32);
            put16(&mut out, 40, 52);
            put16(&mut out, 46, 40);
            put16(&mut out, 48, shnum);
            put16(&mut out, 50, shstrndx);
        }
        out
    }
}

/// One fat binary entry.
#[derive(Clone)]
pub(crate) struct Entry {
    pub kind: u16,
    pub arch: u32,
    pub flags: u64,
    pub major: u16,
    pub minor: u16,
    pub header_size: u32,
    pub payload: Vec<u8>,
    pub compressed_size: u32,
    pub uncompressed_size: u64,
    pub identifier: Option<String>,
    pub options_offset: u32,
    /// Bytes written right after the fixed 64 (e.g. a concat table).
    pub extension: Vec<u8>,
}

impl Entry {
    fn base(kind: u16, arch: u32) -> Self {
        Entry {
            kind,
            arch,
            flags: 0x11,
            major: if kind == 1 { 9 } else { 1 },
            minor: if kind == 1 { 0 } else { 8 },
            header_size: 64,
            payload: vec![0xcc; 32],
            compressed_size: 0,
            uncompressed_size: 0,
            identifier: None,
            options_offset: 0,
            extension: Vec::new(),
        }
    }

    /// A copy of a cubin's `.nv.compat` block in the header's options area (flag 0x1000000).
    pub fn compat_block(mut self, block: &[u8]) -> Self {
        self.flags |= 0x100_0000;
        self.options_offset = 64;
        let mut ext = Vec::new();
        ext.extend_from_slice(&72u32.to_le_bytes());
        ext.extend_from_slice(&(block.len() as u32).to_le_bytes());
        ext.extend_from_slice(block);
        while ext.len() & 7 != 0 {
            ext.push(0);
        }
        self.extension = ext;
        self
    }

    pub fn sass(arch: u32) -> Self {
        Self::base(2, arch)
    }

    pub fn ptx(arch: u32) -> Self {
        let mut e = Self::base(1, arch);
        e.payload =
            format!(".version 9.0\n.target sm_{arch}\n.address_size 64\n\0\0\0").into_bytes();
        e
    }

    pub fn kind(kind: u16, arch: u32) -> Self {
        Self::base(kind, arch)
    }

    pub fn flags(mut self, extra: u64) -> Self {
        self.flags |= extra;
        self
    }

    pub fn version(mut self, major: u16, minor: u16) -> Self {
        self.major = major;
        self.minor = minor;
        self
    }

    pub fn header_size(mut self, n: u32) -> Self {
        self.header_size = n;
        self
    }

    pub fn identifier(mut self, s: &str) -> Self {
        self.identifier = Some(s.to_string());
        self
    }

    pub fn payload(mut self, p: Vec<u8>) -> Self {
        self.payload = p;
        self
    }

    /// Stores `data` zstd-compressed (flag 0x8000), padded to 8 bytes.
    pub fn zstd(mut self, data: &[u8]) -> Self {
        let c =
            ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest);
        self.compressed_size = c.len() as u32;
        self.uncompressed_size = data.len() as u64;
        self.flags |= 0x8000;
        self.payload = c;
        pad8(&mut self.payload);
        self
    }

    /// Stores `data` as a raw LZ4 block (flag 0x2000), padded to 8 bytes.
    pub fn lz4(mut self, data: &[u8]) -> Self {
        let c = lz4_flex::block::compress(data);
        self.compressed_size = c.len() as u32;
        self.uncompressed_size = data.len() as u64;
        self.flags |= 0x2000;
        self.payload = c;
        pad8(&mut self.payload);
        self
    }

    pub fn bytes(&self) -> Vec<u8> {
        let mut h = vec![0u8; self.header_size.max(64) as usize];
        let mut ext = 64usize;
        if !self.extension.is_empty() {
            let need = 64 + self.extension.len();
            if h.len() < need {
                h.resize(need, 0);
            }
            h[64..need].copy_from_slice(&self.extension);
            ext = need;
        }
        let mut ident = (0u32, 0u32);
        if let Some(id) = &self.identifier {
            let need = ext + id.len() + 1;
            if h.len() < need {
                h.resize(need.next_multiple_of(8), 0);
            }
            h[ext..ext + id.len()].copy_from_slice(id.as_bytes());
            ident = (ext as u32, id.len() as u32 + 1);
        }
        let header_size = h.len() as u32;
        put16(&mut h, 0, self.kind);
        put16(&mut h, 2, 0x0101);
        put32(&mut h, 4, header_size);
        put64(&mut h, 8, self.payload.len() as u64);
        put32(&mut h, 16, self.compressed_size);
        put32(&mut h, 20, self.options_offset);
        put16(&mut h, 24, self.minor);
        put16(&mut h, 26, self.major);
        put32(&mut h, 28, self.arch);
        put32(&mut h, 32, ident.0);
        put32(&mut h, 36, ident.1);
        put64(&mut h, 40, self.flags);
        put64(&mut h, 56, self.uncompressed_size);
        h.extend_from_slice(&self.payload);
        h
    }
}

/// A CUDA 13 concatenated group holding cubins for `subs` (arch, flags).
pub(crate) fn concat_entry(subs: &[(u32, u64)]) -> Entry {
    let mut table = Vec::new();
    table.extend_from_slice(&(subs.len() as u32).to_le_bytes());
    table.extend_from_slice(&((8 + 64 * subs.len()) as u32).to_le_bytes());
    for (i, (arch, flags)) in subs.iter().enumerate() {
        let mut s = vec![0u8; 64];
        put16(&mut s, 0, 2);
        put16(&mut s, 2, 0x0101);
        put32(&mut s, 4, (i * 1000) as u32);
        put64(&mut s, 8, 1000);
        put16(&mut s, 24, 8);
        put16(&mut s, 26, 1);
        put32(&mut s, 28, *arch);
        put64(&mut s, 40, *flags);
        table.extend_from_slice(&s);
    }
    let mut e = Entry::kind(0x100, 0).flags(0x8000);
    e.major = 0;
    e.minor = 1;
    e.extension = table;
    e.compressed_size = 16;
    e.uncompressed_size = 1000 * subs.len() as u64;
    e
}

/// A container holding `entries`.
pub(crate) fn container(entries: &[Entry]) -> Vec<u8> {
    let body: Vec<u8> = entries.iter().flat_map(Entry::bytes).collect();
    let mut c = Vec::with_capacity(16 + body.len());
    c.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    c.extend_from_slice(&1u16.to_le_bytes());
    c.extend_from_slice(&16u16.to_le_bytes());
    c.extend_from_slice(&(body.len() as u64).to_le_bytes());
    c.extend_from_slice(&body);
    c
}

/// Containers placed back to back at 8-byte boundaries, as in a section.
pub(crate) fn section_of(containers: &[Vec<u8>]) -> Vec<u8> {
    let mut s = Vec::new();
    for c in containers {
        pad8(&mut s);
        s.extend_from_slice(c);
    }
    pad8(&mut s);
    s
}

/// A 64-byte cubin ELF header (ABI version 7 or 8) with `e_flags`.
pub(crate) fn cubin_header(abi: u8, e_flags: u32) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = 2;
    h[5] = 1;
    h[7] = if abi == 7 { 51 } else { 65 };
    h[8] = abi;
    put16(&mut h, 18, 190);
    put32(&mut h, 48, e_flags);
    h.extend(std::iter::repeat_n(0x5a, 500));
    h
}

fn pad8(v: &mut Vec<u8>) {
    while v.len() & 7 != 0 {
        v.push(0);
    }
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

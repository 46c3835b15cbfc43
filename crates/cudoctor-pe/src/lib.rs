//! Windows executables read on any machine: the PE reader ([`pe`]) — machine, imports,
//! delay-load imports, exports and version resource of a DLL, `.pyd` or `.exe` — for the
//! Windows layer of cudoctor (which `c10.dll`, `cudart64_*.dll` or `msvcp140.dll` a torch DLL
//! needs, and whether what is there exports what it imports), the Windows loader's DLL search
//! ([`loader`]) over Windows paths of a live machine or a tree ([`winfs`]), and what `import
//! torch` loads through it ([`torch`]).

pub mod loader;
pub mod pe;
pub mod torch;
pub mod winfs;

pub use pe::{
    Export, Exports, FileVersion, Import, ImportedSymbol, Machine, PeError, PeFile, VersionInfo,
};

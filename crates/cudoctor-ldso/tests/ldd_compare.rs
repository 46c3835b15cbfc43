//! Real libraries built with gcc, resolved by cudoctor-ldso and by the real `ldd` on the same
//! files with the same LD_LIBRARY_PATH: the object lists (names, paths, order, "not found")
//! must be identical, and so must `ldd -r`'s undefined symbols and missing versions.

mod common;

use std::path::Path;

use common::{
    build_so, ldd, ldd_view, ldd_view_with_preloads, ldd_with_preload, LddObject, TempTree,
};
use cudoctor_ldso::{
    find_ld_library_path_shadowing, LibsReport, LoadOptions, LoaderConfig, Process, ProcessEnv,
    SymbolCheck, Via,
};

const BASE_V2_MAP: &str =
    "BASE_1 { global: base_fn; local: *; };\nBASE_2 { global: base_fn; base_new_func; } BASE_1;\n";
const BASE_V1_MAP: &str = "BASE_1 { global: base_fn; local: *; };\n";

/// The scenario tree (see the comments for what each piece exercises).
struct Scenario {
    t: TempTree,
}

impl Scenario {
    fn build() -> Scenario {
        let t = TempTree::new("ldd");
        let map2 = t.write("maps/base2.map", BASE_V2_MAP.as_bytes());
        let map1 = t.write("maps/base1.map", BASE_V1_MAP.as_bytes());
        // Two copies of libbase.so.1: a/ defines BASE_2 (base_fn@@BASE_2, base_new_func),
        // b/ is older and only has BASE_1.
        build_so(
            &t,
            "a/libbase.so.1",
            r#"__asm__(".symver base_fn_1,base_fn@BASE_1");
               __asm__(".symver base_fn_2,base_fn@@BASE_2");
               int base_fn_1(void){return 1;} int base_fn_2(void){return 2;}
               int base_new_func(void){return 3;}"#,
            &[
                "-Wl,-soname,libbase.so.1",
                &format!("-Wl,--version-script={}", map2.display()),
            ],
        );
        build_so(
            &t,
            "b/libbase.so.1",
            "int base_fn(void){return 1;}",
            &[
                "-Wl,-soname,libbase.so.1",
                &format!("-Wl,--version-script={}", map1.display()),
            ],
        );
        // Only reachable through an inherited DT_RPATH (c/ is in libtop's RPATH).
        build_so(
            &t,
            "c/libdeep.so",
            "int deep(void){return 4;}",
            &["-Wl,-soname,libdeep.so"],
        );
        build_so(
            &t,
            "c/libdeep2.so",
            "int deep2(void){return 5;}",
            &["-Wl,-soname,libdeep2.so"],
        );
        // A hwcaps subdirectory copy preferred over the plain one (x86-64-v2: any machine
        // that runs these tests has it, and the config reads /proc/cpuinfo).
        build_so(
            &t,
            "a/glibc-hwcaps/x86-64-v2/libhw.so.1",
            "int hw(void){return 2;}",
            &["-Wl,-soname,libhw.so.1"],
        );
        build_so(
            &t,
            "a/libhw.so.1",
            "int hw(void){return 1;}",
            &["-Wl,-soname,libhw.so.1"],
        );
        // A wrong-class candidate (ELFCLASS32 in e_ident) ld.so must skip, then the good one.
        let good = build_so(
            &t,
            "a/libwrong.so.1",
            "int wrong(void){return 1;}",
            &["-Wl,-soname,libwrong.so.1"],
        );
        let mut bytes = std::fs::read(&good).unwrap();
        bytes[4] = 1;
        t.write("w/libwrong.so.1", &bytes);
        // A stub only used at link time: at run time libmissing.so.7 is nowhere.
        build_so(
            &t,
            "stub/libmissing.so",
            "int missing_fn(void){return 0;}",
            &["-Wl,-soname,libmissing.so.7"],
        );

        let a = t.s("a");
        let b = t.s("b");
        let c = t.s("c");
        // libmid: DT_RUNPATH (new dtags) w/ then a/; needs libdeep2.so which is only in c/
        // (not inherited from libtop's RPATH, since libmid has a RUNPATH: missing).
        build_so(
            &t,
            "lib/libmid.so",
            r#"#include <string.h>
               int base_fn(void); int base_new_func(void); int deep2(void); int hw(void); int wrong(void);
               int mid(const char *s){return (int)strlen(s)+base_fn()+base_new_func()+deep2()+hw()+wrong();}"#,
            &[
                "-Wl,-soname,libmid.so",
                &format!("-L{a}"),
                "-l:libbase.so.1",
                &format!("-L{c}"),
                "-l:libdeep2.so",
                "-l:libhw.so.1",
                "-l:libwrong.so.1",
                "-Wl,--enable-new-dtags",
                "-Wl,-rpath,$ORIGIN/../w:$ORIGIN/../a",
            ],
        );
        // libold: DT_RPATH only (old dtags) to b/; its libbase.so.1 request finds the copy
        // already loaded by libmid (the process model), its libdeep.so comes from libtop's RPATH.
        build_so(
            &t,
            "lib/libold.so",
            "int base_fn(void); int deep(void); int old(void){return base_fn()+deep();}",
            &[
                "-Wl,-soname,libold.so",
                &format!("-L{b}"),
                "-l:libbase.so.1",
                &format!("-L{c}"),
                "-l:libdeep.so",
                "-Wl,--disable-new-dtags",
                "-Wl,-rpath,$ORIGIN/../b",
            ],
        );
        // libtop: the "executable" of the test process. DT_RPATH with ${ORIGIN}; needs a
        // missing library; has an undefined strong symbol and a weak one.
        let lib = t.s("lib");
        let stub = t.s("stub");
        build_so(
            &t,
            "top/libtop.so",
            r#"int mid(const char*); int old(void); int missing_fn(void);
               int top_missing_symbol(void);
               extern int weak_thing(void) __attribute__((weak));
               int top(void){return mid("x")+old()+missing_fn()+top_missing_symbol()+(weak_thing?weak_thing():0);}"#,
            &[
                &format!("-L{lib}"),
                "-lmid",
                "-lold",
                &format!("-L{stub}"),
                "-lmissing",
                "-Wl,--disable-new-dtags",
                "-Wl,-rpath,${ORIGIN}/../lib:$ORIGIN/../c",
            ],
        );
        Scenario { t }
    }

    fn top(&self) -> String {
        self.t.s("top/libtop.so")
    }
}

fn host_env(llp: Option<&str>) -> ProcessEnv {
    ProcessEnv::new(Path::new("/")).with_ld_library_path(llp)
}

fn interpreter() -> String {
    LoaderConfig::detect(Path::new("/"))
        .interpreter
        .unwrap_or_default()
}

fn emulate(file: &str, llp: Option<&str>) -> (Process, LibsReport) {
    let mut p = Process::new(host_env(llp));
    p.load_executable(file, LoadOptions::check_symbols(SymbolCheck::All))
        .expect("load");
    let r = p.report();
    (p, r)
}

fn assert_same_as_ldd(file: &str, llp: Option<&str>) -> LibsReport {
    let (_p, report) = emulate(file, llp);
    let ours = ldd_view(&report, &interpreter());
    let real = ldd(Path::new(file), llp, true);
    assert_eq!(
        ours, real.objects,
        "objects differ from ldd for {file} (LD_LIBRARY_PATH={llp:?})\nldd stdout:\n{}\nldd stderr:\n{}",
        real.stdout, real.stderr
    );
    // ldd -r: undefined symbols, per object.
    let mut ours_undef: Vec<(String, String)> = report
        .objects
        .iter()
        .flat_map(|o| {
            o.unresolved_symbols
                .iter()
                .map(move |s| (o.path.clone(), s.clone()))
        })
        .collect();
    let mut real_undef = real.undefined.clone();
    ours_undef.sort();
    real_undef.sort();
    assert_eq!(
        ours_undef, real_undef,
        "undefined symbols differ\nldd:\n{}{}",
        real.stdout, real.stderr
    );
    // Missing versions: (library path, version, required by).
    let mut ours_ver: Vec<(String, String, String)> = report
        .objects
        .iter()
        .flat_map(|o| {
            o.missing_versions.iter().map(move |m| {
                (
                    m.provider.clone().unwrap_or_default(),
                    m.version.clone(),
                    o.path.clone(),
                )
            })
        })
        .collect();
    let mut real_ver = real.missing_versions.clone();
    ours_ver.sort();
    real_ver.sort();
    assert_eq!(
        ours_ver, real_ver,
        "missing versions differ\nldd:\n{}{}",
        real.stdout, real.stderr
    );
    report
}

fn needed<'a>(r: &'a LibsReport, obj: &str, name: &str) -> &'a cudoctor_ldso::NeededReport {
    r.object(obj)
        .unwrap_or_else(|| panic!("no object {obj}"))
        .needed
        .iter()
        .find(|n| n.name == name)
        .unwrap_or_else(|| panic!("{obj} does not need {name}"))
}

#[test]
fn resolution_matches_ldd_with_and_without_ld_library_path() {
    let s = Scenario::build();
    let top = s.top();
    let lib_mid = format!("{}/../lib/libmid.so", s.t.s("top"));
    let lib_old = format!("{}/../lib/libold.so", s.t.s("top"));

    // Without LD_LIBRARY_PATH.
    let r = assert_same_as_ldd(&top, None);
    assert_eq!(needed(&r, &top, "libmid.so").via, Via::Rpath);
    assert_eq!(needed(&r, &top, "libmissing.so.7").via, Via::Missing);
    let base = needed(&r, &lib_mid, "libbase.so.1");
    assert_eq!(base.via, Via::Runpath);
    assert_eq!(
        base.resolved.as_deref(),
        Some(format!("{}/../lib/../a/libbase.so.1", s.t.s("top")).as_str())
    );
    assert_eq!(
        base.real_path.as_deref(),
        Some(s.t.s("a/libbase.so.1").as_str())
    );
    // RUNPATH is not inherited: libdeep2.so (only in libtop's RPATH dirs) is missing for libmid.
    assert_eq!(needed(&r, &lib_mid, "libdeep2.so").via, Via::Missing);
    assert!(needed(&r, &lib_mid, "libhw.so.1")
        .resolved
        .as_deref()
        .unwrap()
        .contains("glibc-hwcaps/x86-64-v2/"));
    assert!(needed(&r, &lib_mid, "libwrong.so.1")
        .resolved
        .as_deref()
        .unwrap()
        .ends_with("/a/libwrong.so.1"));
    assert_eq!(needed(&r, &top, "libc.so.6").via, Via::Cache);
    assert_eq!(needed(&r, &lib_mid, "libc.so.6").via, Via::Loaded);
    // The process model: libold's own RPATH points at b/, but libbase.so.1 is already loaded.
    assert_eq!(needed(&r, &lib_old, "libbase.so.1").via, Via::Loaded);
    // DT_RPATH is inherited from the loader chain: libdeep.so via libtop's RPATH.
    assert_eq!(needed(&r, &lib_old, "libdeep.so").via, Via::Rpath);
    let top_obj = r.object(&top).unwrap();
    assert_eq!(
        top_obj.unresolved_symbols,
        ["missing_fn", "top_missing_symbol"]
    );
    assert!(top_obj.symbols_checked);

    // With LD_LIBRARY_PATH=b/: it beats libmid's RUNPATH (shadowing), the old copy lacks
    // BASE_2, so base_fn@BASE_2 and base_new_func@BASE_2 are unresolved and the version is
    // missing; libold's RPATH still wins over LD_LIBRARY_PATH for what it loads itself.
    let llp = s.t.s("b");
    let r2 = assert_same_as_ldd(&top, Some(&llp));
    let base2 = needed(&r2, &lib_mid, "libbase.so.1");
    assert_eq!(base2.via, Via::LdLibraryPath);
    let mid_obj = r2.object(&lib_mid).unwrap();
    assert_eq!(
        mid_obj.unresolved_symbols,
        ["base_fn@BASE_2", "base_new_func@BASE_2", "deep2"]
    );
    assert_eq!(mid_obj.missing_versions.len(), 1);
    assert_eq!(mid_obj.missing_versions[0].version, "BASE_2");

    let shadow = find_ld_library_path_shadowing(&r2, &r);
    assert_eq!(shadow.len(), 1, "{shadow:?}");
    assert_eq!(shadow[0].name, "libbase.so.1");
    assert_eq!(shadow[0].otherwise_via, Via::Runpath);

    // Empty elements and ';' separators in LD_LIBRARY_PATH behave like glibc's.
    assert_same_as_ldd(&top, Some(&format!(":{llp};{}", s.t.s("c"))));
}

#[test]
fn each_library_alone_matches_ldd() {
    let s = Scenario::build();
    for lib in [
        "lib/libmid.so",
        "lib/libold.so",
        "a/libbase.so.1",
        "b/libbase.so.1",
        "c/libdeep.so",
    ] {
        assert_same_as_ldd(&s.t.s(lib), None);
        assert_same_as_ldd(&s.t.s(lib), Some(&s.t.s("b")));
    }
}

#[test]
fn invalid_candidate_stops_the_search_like_ld_so() {
    let t = TempTree::new("fatal");
    build_so(
        &t,
        "good/libtext.so.1",
        "int txt(void){return 1;}",
        &["-Wl,-soname,libtext.so.1"],
    );
    t.write(
        "bad/libtext.so.1",
        b"this is a text file that is not a shared object at all, honestly\n",
    );
    let good = t.s("good");
    let f = build_so(
        &t,
        "libf.so",
        "int txt(void); int f(void){return txt();}",
        &[
            &format!("-L{good}"),
            "-l:libtext.so.1",
            "-Wl,-rpath,$ORIGIN/bad:$ORIGIN/good",
        ],
    );
    let (_p, r) = emulate(&f.to_string_lossy(), None);
    let n = needed(&r, &f.to_string_lossy(), "libtext.so.1");
    assert_eq!(n.via, Via::Missing);
    let err = n.error.as_deref().unwrap();
    assert!(
        err.ends_with("/bad/libtext.so.1: invalid ELF header"),
        "{err}"
    );
    let real = ldd(&f, None, false);
    assert!(!real.success);
    // ld.so's message, which ldd prints on its standard output.
    let said = format!("{}{}", real.stdout, real.stderr);
    assert!(
        said.contains(&format!("error while loading shared libraries: {err}")),
        "ldd said: {said}"
    );
}

#[test]
fn nodeflib_skips_default_directories_and_their_cache_entries() {
    let t = TempTree::new("nodeflib");
    let f = build_so(
        &t,
        "libnd.so",
        "int nd(void){return 1;}",
        &["-Wl,-z,nodefaultlib"],
    );
    let (_p, r) = emulate(&f.to_string_lossy(), None);
    let real = ldd(&f, None, false);
    assert_eq!(
        ldd_view(&r, &interpreter()),
        real.objects,
        "ldd:\n{}{}",
        real.stdout,
        real.stderr
    );
    // libc.so.6 lives in a default directory: with DF_1_NODEFLIB ld.so cannot find it.
    assert!(real.objects.contains(&LddObject {
        name: "libc.so.6".into(),
        path: None
    }));
}

#[test]
fn direct_paths_and_already_loaded_objects() {
    let s = Scenario::build();
    let mut p = Process::new(host_env(None));
    // dlopen of libold first: its own RPATH loads b/'s libbase.so.1 ...
    let first = p
        .load(&s.t.s("lib/libold.so"), LoadOptions::default())
        .unwrap();
    let base = first[0]
        .needed
        .iter()
        .find(|n| n.name == "libbase.so.1")
        .unwrap();
    assert_eq!(base.via, Via::Rpath);
    assert_eq!(first[0].loaded_by, None);
    let base_obj = first
        .iter()
        .find(|o| o.soname.as_deref() == Some("libbase.so.1"))
        .unwrap();
    assert_eq!(base_obj.loaded_by.as_deref(), Some(first[0].path.as_str()));
    assert!(base
        .resolved
        .as_deref()
        .unwrap()
        .ends_with("/b/libbase.so.1"));
    // ... so libmid, loaded next, reuses it whatever its RUNPATH says, and its BASE_2 symbols
    // are then unresolved: the situation of an extension loaded after torch.
    let second = p
        .load(
            &s.t.s("lib/libmid.so"),
            LoadOptions::check_symbols(SymbolCheck::Requested),
        )
        .unwrap();
    let mid = &second[0];
    let base = mid
        .needed
        .iter()
        .find(|n| n.name == "libbase.so.1")
        .unwrap();
    assert_eq!(base.via, Via::Loaded);
    assert!(base
        .resolved
        .as_deref()
        .unwrap()
        .ends_with("/b/libbase.so.1"));
    assert_eq!(
        mid.unresolved_symbols,
        ["base_fn@BASE_2", "base_new_func@BASE_2", "deep2"]
    );
    // Loading the same path again returns the existing object.
    let again = p
        .load(&s.t.s("lib/libmid.so"), LoadOptions::default())
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].path, mid.path);
    // A missing file is an error, not a report.
    assert!(p
        .load(&s.t.s("lib/nope.so"), LoadOptions::default())
        .is_err());
}

#[test]
fn report_json_has_the_documented_shape() {
    let s = Scenario::build();
    let (p, _) = emulate(&s.top(), None);
    let json = serde_json::to_value(p.report_without_loader()).unwrap();
    let objects = json["objects"].as_array().unwrap();
    let top = &objects[0];
    assert_eq!(top["path"], s.top());
    let first = &top["needed"][0];
    assert_eq!(first["name"], "libmid.so");
    assert_eq!(first["via"], "rpath");
    assert!(first["resolved"].is_string());
    let missing = top["needed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "libmissing.so.7")
        .unwrap();
    assert_eq!(missing["via"], "missing");
    assert!(missing["resolved"].is_null());
    assert!(top["unresolved_symbols"].is_array());
    let back: LibsReport = serde_json::from_value(json).unwrap();
    assert_eq!(back, p.report_without_loader());
}

#[test]
fn ld_preload_objects_satisfy_later_needs() {
    let s = Scenario::build();
    let mid = s.t.s("lib/libmid.so");
    let deep2 = s.t.s("c/libdeep2.so");
    let mut env = host_env(None);
    env.ld_preload = Some(deep2.clone());
    let mut p = Process::new(env);
    p.load_executable(&mid, LoadOptions::default()).unwrap();
    let r = p.report();
    // Normally missing for libmid (RUNPATH is not inherited), here the preloaded object.
    let n = needed(&r, &mid, "libdeep2.so");
    assert_eq!(n.via, Via::Loaded);
    assert_eq!(n.resolved.as_deref(), Some(deep2.as_str()));
    let real = ldd_with_preload(Path::new(&mid), None, Some(&deep2), false);
    assert_eq!(
        ldd_view_with_preloads(&r, &interpreter(), &[&deep2]),
        real.objects,
        "ldd:\n{}{}",
        real.stdout,
        real.stderr
    );
}

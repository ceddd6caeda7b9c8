//! The binary is linked with `hot-text.ld` (crates/kube-endpoints/build.rs): the functions
//! `run` executes sit together in their own section ahead of the rest of the code, so that a
//! controller keeps resident about the code it runs rather than most of the binary's text.

use object::{Object, ObjectSection, ObjectSymbol};

#[test]
fn the_code_run_executes_is_linked_into_one_section_ahead_of_the_rest() {
    if option_env!("KUBE_ENDPOINTS_HOT_TEXT") == Some("0") {
        eprintln!("skipped: built with KUBE_ENDPOINTS_HOT_TEXT=0");
        return;
    }
    let file = std::fs::File::open(env!("CARGO_BIN_EXE_kube-endpoints")).unwrap();
    let data = object::ReadCache::new(file);
    let binary = object::File::parse(&data).unwrap();
    let hot = binary
        .section_by_name(".text.run_hot")
        .expect("no .text.run_hot section: build.rs did not pass hot-text.ld to the linker");
    let text = binary.section_by_name(".text").unwrap();
    assert!(hot.size() > 0, "the hot section is empty");
    assert!(hot.address() + hot.size() <= text.address());
    let in_hot = |address: u64| (hot.address()..hot.address() + hot.size()).contains(&address);

    let address_of = |part: &str| {
        binary
            .symbols()
            .find(|s| s.name().is_ok_and(|n| n.contains(part)))
            .map(|s| s.address())
            .unwrap_or_else(|| panic!("no symbol named like {part}"))
    };
    // A handler every pod change goes through is in the script; `--help`'s rendering, which
    // a running controller never executes, is not.
    assert!(in_hot(address_of("EndpointsController$GT$9on_update17h")));
    assert!(!in_hot(address_of("HelpTemplate20write_templated_help17h")));
}

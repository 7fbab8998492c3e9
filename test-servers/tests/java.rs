//! `java::compile`: an unchanged source reuses its classes, a changed one gets new ones, and
//! nothing is left behind per process. Needs `javac` (run by `scripts/zookeeper-ci.sh`).

use std::fs;
use std::path::Path;

use aqs_test_servers::java::compile;

/// Names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    v.sort();
    v
}

#[test]
fn compile_reuses_unchanged_classes_and_leaves_no_partial_directory() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("java-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    let out = root.join("out");
    fs::create_dir_all(&out).unwrap();
    let src = root.join("Hello.java");
    fs::write(
        &src,
        "public class Hello { public static void main(String[] a) {} }\n",
    )
    .unwrap();

    let first = compile(&src, "", &out).unwrap();
    assert!(first.join("Hello.class").is_file());
    let again = compile(&src, "", &out).unwrap();
    assert_eq!(first, again, "an unchanged source reuses its classes");

    fs::write(&src, "public class Hello { static int x = 1; }\n").unwrap();
    let changed = compile(&src, "", &out).unwrap();
    assert_ne!(first, changed, "a changed source gets new classes");
    assert!(changed.join("Hello.class").is_file());

    fs::write(&src, "public class Hello { int }\n").unwrap();
    let err = compile(&src, "", &out).unwrap_err();
    assert!(err.contains("javac failed"), "{err}");

    // Two class directories, no `.part` left by the failed or the finished compiles.
    let left = names(&out);
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(
        left.iter().all(|n| n.starts_with("aqs-java-Hello-")),
        "{left:?}"
    );
    fs::remove_dir_all(&root).unwrap();
}

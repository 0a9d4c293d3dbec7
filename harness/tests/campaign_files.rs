//! Campaign files as data: every `tests/data/campaign/<case>.toml` is refused by
//! `vac campaign check` with exit 2 and exactly the message of `<case>.err` (which names
//! `file:line:col`), before anything runs; `sample/campaign.toml`, which uses every key,
//! is accepted. `VAC_BLESS=1` rewrites the `.err` files.

mod common;

use std::path::Path;
use std::process::Command;

fn check(path: &str) -> std::process::Output {
    Command::new(common::VAC)
        .args(["campaign", "check", path])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

#[test]
fn bad_campaign_files_are_refused_by_file_line_and_column() {
    let bless = std::env::var("VAC_BLESS").is_ok_and(|v| !v.is_empty());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/campaign");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 10, "{cases:?}");
    let mut failures = Vec::new();
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let relative = format!("tests/data/campaign/{name}");
        let output = check(&relative);
        assert_eq!(output.status.code(), Some(2), "{name}: {output:?}");
        assert!(
            output.stdout.is_empty(),
            "{name}: nothing is planned: {output:?}"
        );
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(
            stderr.starts_with(&format!("vac: {relative}:")),
            "{name}: the error names the file: {stderr}"
        );
        let expected_path = case.with_extension("err");
        if bless {
            std::fs::write(&expected_path, &stderr).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));
        if stderr != expected {
            failures.push(format!(
                "{name}:\n  expected {expected:?}\n  found    {stderr:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_campaign_file_with_every_key_is_accepted_and_planned() {
    let output = check("tests/data/campaign/sample/campaign.toml");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("campaign \"fixtures\", 3 targets × 3 repetitions, 4 jobs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("tests/data/campaign/sample/runs/fixtures"),
        "{stdout}"
    );
    for id in ["notes-dishonest", "notes-http", "remote-notes"] {
        assert!(stdout.contains(&format!("run  {id}")), "{stdout}");
    }
    // A shard plans its part only, the same part every time.
    let shard = Command::new(common::VAC)
        .args([
            "campaign",
            "check",
            "tests/data/campaign/sample/campaign.toml",
            "--shard",
            "1/3",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(shard.status.success());
    let text = String::from_utf8(shard.stdout).unwrap();
    assert!(text.contains("shard-1-of-3"), "{text}");
    assert_eq!(
        text.matches("run  ").count() + text.matches("skip ").count(),
        3,
        "{text}"
    );
    for bad in ["3/3", "1", "a/b", "0/0"] {
        let refused = Command::new(common::VAC)
            .args([
                "campaign",
                "check",
                "tests/data/campaign/sample/campaign.toml",
                "--shard",
                bad,
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert_eq!(refused.status.code(), Some(2), "--shard {bad}");
        assert!(String::from_utf8_lossy(&refused.stderr).contains(&format!("--shard {bad:?}")));
    }
}

#[test]
fn the_schema_accepts_the_sample_and_the_documented_example_and_refuses_bad_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("campaign.schema.json")).unwrap())
            .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let as_json = |text: &str| -> serde_json::Value {
        let value: toml::Value = toml::from_str(text).unwrap();
        serde_json::to_value(value).unwrap()
    };
    let sample =
        std::fs::read_to_string(root.join("tests/data/campaign/sample/campaign.toml")).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&as_json(&sample))
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    // The schema refuses what the parser refuses: an unknown key, a target without a
    // command or url, a command and a url together.
    for case in [
        "unknown-key",
        "missing-command",
        "command-and-url",
        "zero-repetitions",
        "bad-id",
    ] {
        let text =
            std::fs::read_to_string(root.join(format!("tests/data/campaign/{case}.toml"))).unwrap();
        assert!(
            !validator.is_valid(&as_json(&text)),
            "the schema accepts {case}"
        );
    }
    // CAMPAIGNS.md's example validates too.
    let doc = std::fs::read_to_string(root.join("CAMPAIGNS.md")).unwrap();
    let example = doc
        .split("```toml\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    assert!(validator.is_valid(&as_json(example)));
}

#[test]
fn the_deploy_bundle_carries_its_files_and_command_lines_vac_accepts_from_its_directory() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let to = tmp.path().join("deploy");
    let output = Command::new(common::VAC)
        .args([
            "campaign",
            "deploy",
            "tests/data/campaign/sample/campaign.toml",
            "--shards",
            "3",
            "--to",
            to.to_str().unwrap(),
            "--image",
            "registry.example/vac:0.1.0",
        ])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let read = |name: &str| std::fs::read_to_string(to.join(name)).unwrap();
    let (k8s, k8s_merge, sbatch, merge) = (
        read("kubernetes.yaml"),
        read("kubernetes-merge.yaml"),
        read("campaign.sbatch"),
        read("merge.sbatch"),
    );
    for text in [&k8s, &k8s_merge, &sbatch, &merge] {
        assert!(!text.contains("{{"), "a placeholder is left: {text}");
        assert!(
            !text.contains("--kubernetes") && !text.contains("--slurm"),
            "{text}"
        );
    }
    // Every file the campaign references is in the bundle, at the place its reference
    // resolves to (the CA file lives two directories up, beside the campaign's).
    let campaign = "campaign/campaign/sample/campaign.toml";
    for (bundled, source) in [
        (campaign, "tests/data/campaign/sample/campaign.toml"),
        (
            "campaign/campaign/sample/contracts/notes.toml",
            "tests/data/campaign/sample/contracts/notes.toml",
        ),
        (
            "campaign/campaign/sample/data/repo/README.md",
            "tests/data/campaign/sample/data/repo/README.md",
        ),
        ("campaign/tls/ca.pem", "tests/data/tls/ca.pem"),
    ] {
        assert_eq!(
            std::fs::read(to.join(bundled)).unwrap(),
            std::fs::read(root.join(source)).unwrap(),
            "{bundled}"
        );
    }
    // Kubernetes: a claim, an Indexed Job of 3, privileged (and saying so), the bundle in a
    // ConfigMap projected to its paths, and a merge of exactly the 3 shard directories in
    // its own file, applied after the shards completed.
    assert!(k8s.contains("kind: PersistentVolumeClaim") && k8s.contains("name: vac-runs"));
    assert!(k8s.contains("completionMode: Indexed"));
    assert!(k8s.contains("completions: 3") && k8s.contains("parallelism: 3"));
    assert!(k8s.contains("privileged: true") && k8s.contains("PRIVILEGED:"));
    assert!(k8s.contains("image: registry.example/vac:0.1.0"));
    assert!(
        k8s.contains("#   name = \"fixtures\""),
        "the campaign file, for the reader"
    );
    assert!(k8s.contains(r#"path: "campaign/sample/campaign.toml" }"#));
    assert!(k8s.contains(r#"path: "tls/ca.pem" }"#));
    assert!(k8s.contains(
        "vac campaign run /campaign/campaign/sample/campaign.toml --shards 3 --out /runs/fixtures --quiet"
    ));
    assert!(!k8s.contains("kind: Job\nmetadata:\n  name: vac-fixtures-merge"));
    assert!(k8s_merge.contains(
        "vac campaign merge /runs/fixtures/merged /runs/fixtures/shard-0-of-3 /runs/fixtures/shard-1-of-3 /runs/fixtures/shard-2-of-3"
    ));
    // Findings are not failures, and a retried merge verifies instead of refusing.
    for text in [&k8s, &k8s_merge, &sbatch, &merge] {
        assert!(
            text.contains("[ $code -le 1 ] || [ $code -eq 5 ]"),
            "{text}"
        );
    }
    assert!(
        k8s_merge.contains("vac verify /runs/fixtures/merged")
            && merge.contains("vac verify runs/merged")
    );
    // Slurm: an array of 3 tasks and a merge of their 3 directories, every path relative.
    assert!(sbatch.contains("#SBATCH --array=0-2"));
    assert!(sbatch.contains(&format!("vac campaign run {campaign} --out runs --quiet")));
    assert!(merge.contains(
        "vac campaign merge runs/merged runs/shard-0-of-3 runs/shard-1-of-3 runs/shard-2-of-3"
    ));
    let tmp_path = tmp.path().to_str().unwrap();
    for text in [&sbatch, &merge] {
        assert!(
            !text.contains(tmp_path) && !text.contains(root.to_str().unwrap()),
            "{text}"
        );
    }
    for script in ["campaign.sbatch", "merge.sbatch"] {
        let syntax = Command::new("bash")
            .arg("-n")
            .arg(to.join(script))
            .output()
            .unwrap();
        assert!(syntax.status.success(), "{script}: {syntax:?}");
    }
    // The command lines are ones vac accepts in the bundle's directory (where a user submits
    // from), with the shard the scheduler gives.
    let k8s_check = Command::new(common::VAC)
        .args([
            "campaign",
            "check",
            campaign,
            "--shards",
            "3",
            "--out",
            "/runs/fixtures",
        ])
        .env("JOB_COMPLETION_INDEX", "2")
        .current_dir(&to)
        .output()
        .unwrap();
    assert!(k8s_check.status.success(), "{k8s_check:?}");
    assert!(String::from_utf8_lossy(&k8s_check.stdout).contains("/runs/fixtures/shard-2-of-3"));
    let slurm_check = Command::new(common::VAC)
        .args(["campaign", "check", campaign, "--out", "runs"])
        .env("SLURM_ARRAY_TASK_ID", "1")
        .env("SLURM_ARRAY_TASK_MIN", "0")
        .env("SLURM_ARRAY_TASK_COUNT", "3")
        .current_dir(&to)
        .output()
        .unwrap();
    assert!(slurm_check.status.success(), "{slurm_check:?}");
    assert!(String::from_utf8_lossy(&slurm_check.stdout).contains("runs/shard-1-of-3"));
}

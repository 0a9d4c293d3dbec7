use super::*;

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

#[test]
fn a_command_inside_node_modules_names_its_package_and_lock() {
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("node_modules/@scope/server");
    std::fs::create_dir_all(package.join("dist")).unwrap();
    std::fs::write(
        package.join("package.json"),
        r#"{"name": "@scope/server", "version": "1.2.3"}"#,
    )
    .unwrap();
    std::fs::write(package.join("dist/index.js"), "").unwrap();
    std::fs::write(dir.path().join("package-lock.json"), "lock").unwrap();
    let found = npm_package(&package.join("dist/index.js")).unwrap();
    assert_eq!(found["package"], "@scope/server@1.2.3");
    assert_eq!(
        found["lock_blake3"],
        blake3::hash(b"lock").to_hex().to_string()
    );
    assert_eq!(npm_package(Path::new("/usr/bin/env")), None);
}

#[test]
fn a_command_inside_a_venv_names_its_python_and_distributions() {
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let site = venv.join("lib/python3.11/site-packages");
    for dist in [
        "mcp_server_git-2026.10.19.dist-info",
        "GitPython-3.1.45.dist-info",
    ] {
        std::fs::create_dir_all(site.join(dist)).unwrap();
    }
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::fs::write(
        venv.join("pyvenv.cfg"),
        "home = /usr/bin\nversion = 3.11.7\n",
    )
    .unwrap();
    std::fs::write(venv.join("bin/mcp-server-git"), "").unwrap();
    let found = python_venv(&venv.join("bin/mcp-server-git")).unwrap();
    assert_eq!(found["python"], "3.11.7");
    let listed = ["GitPython==3.1.45", "mcp_server_git==2026.10.19"];
    assert_eq!(found["distributions"], json!(listed));
    assert_eq!(
        found["distributions_blake3"],
        blake3::hash(listed.join("\n").as_bytes())
            .to_hex()
            .to_string()
    );
    assert_eq!(python_venv(Path::new("/usr/bin/env")), None);
}

#[test]
fn every_id_is_in_exactly_one_shard() {
    for count in 1..6 {
        for id in ["a", "notes-dishonest", "server-filesystem", "x.y_z", "0"] {
            let holders = (0..count)
                .filter(|&index| Shard { index, count }.holds(id))
                .count();
            assert_eq!(holders, 1, "{id} in {count} shards");
        }
    }
}

#[test]
fn kubernetes_indexed_jobs_give_the_index_and_need_a_count() {
    let shard = Shard::from_env(&env(&[("JOB_COMPLETION_INDEX", "2")]), Some(3)).unwrap();
    assert_eq!(shard, Some(Shard { index: 2, count: 3 }));
    let from_var = Shard::from_env(
        &env(&[("JOB_COMPLETION_INDEX", "0"), ("VAC_SHARDS", "4")]),
        None,
    )
    .unwrap();
    assert_eq!(from_var, Some(Shard { index: 0, count: 4 }));
    let missing = Shard::from_env(&env(&[("JOB_COMPLETION_INDEX", "0")]), None);
    assert!(missing.unwrap_err().to_string().contains("VAC_SHARDS"));
    let beyond = Shard::from_env(&env(&[("JOB_COMPLETION_INDEX", "3")]), Some(3));
    assert!(beyond.is_err());
    assert_eq!(Shard::from_env(&env(&[]), None).unwrap(), None);
}

#[test]
fn slurm_arrays_give_the_task_relative_to_min_and_step() {
    let vars = [
        ("SLURM_ARRAY_TASK_ID", "14"),
        ("SLURM_ARRAY_TASK_MIN", "10"),
        ("SLURM_ARRAY_TASK_STEP", "2"),
        ("SLURM_ARRAY_TASK_COUNT", "5"),
    ];
    let shard = Shard::from_env(&env(&vars), None).unwrap();
    assert_eq!(shard, Some(Shard { index: 2, count: 5 }));
    let off_step = [
        ("SLURM_ARRAY_TASK_ID", "13"),
        ("SLURM_ARRAY_TASK_MIN", "10"),
        ("SLURM_ARRAY_TASK_STEP", "2"),
        ("SLURM_ARRAY_TASK_COUNT", "5"),
    ];
    assert!(Shard::from_env(&env(&off_step), None).is_err());
    let no_count = [("SLURM_ARRAY_TASK_ID", "0")];
    assert!(
        Shard::from_env(&env(&no_count), None)
            .unwrap_err()
            .to_string()
            .contains("SLURM_ARRAY_TASK_COUNT")
    );
}

#[test]
fn the_plan_is_by_target_id_then_repetition_whatever_the_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    let text = "name = \"c\"\nrepetitions = 2\n\n[[target]]\nid = \"zeta\"\ncommand = [\"true\"]\n\n[[target]]\nid = \"alpha\"\ncommand = [\"true\"]\n";
    let campaign = Campaign::parse(&file, text).unwrap();
    let order: Vec<(String, u32)> = plan(&campaign, None)
        .into_iter()
        .map(|p| (campaign.targets[p.target].id.clone(), p.repetition))
        .collect();
    assert_eq!(
        order,
        [
            ("alpha".to_owned(), 1),
            ("alpha".to_owned(), 2),
            ("zeta".to_owned(), 1),
            ("zeta".to_owned(), 2)
        ]
    );
    assert_eq!(campaign.out, dir.path().join("runs/c"));
    assert_ne!(probe_seed(7, "alpha", 1), probe_seed(7, "alpha", 2));
    assert_eq!(probe_seed(7, "alpha", 1), probe_seed(7, "alpha", 1));
}

use clap::CommandFactory;

use super::*;

#[test]
fn the_command_line_is_well_formed() {
    Cli::command().debug_assert();
}

#[test]
fn every_flag_has_an_environment_variable() {
    fn check(cmd: &clap::Command) {
        for arg in cmd.get_arguments() {
            let builtin = matches!(arg.get_id().as_str(), "help" | "version");
            assert!(
                builtin
                    || arg
                        .get_env()
                        .is_some_and(|e| e.to_string_lossy().starts_with("DYNARELAY_")),
                "--{} of `{}` has no DYNARELAY_* variable",
                arg.get_id(),
                cmd.get_name()
            );
        }
        cmd.get_subcommands().for_each(check);
    }
    check(&Cli::command());
}

#[test]
fn the_idle_timeout_may_not_exceed_the_header_read_timeout() {
    let serve = |extra: &[&str]| {
        let mut argv = vec!["dynarelay", "serve", "--model", "m.toml"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("serve's flags").command {
            Command::Serve(args) => args.connections(),
            _ => unreachable!("parsed as serve"),
        }
    };
    let defaults = serve(&[]).expect("the defaults are valid");
    assert_eq!(defaults, ConnectionSettings::default());
    let err = serve(&["--idle-timeout-secs", "65"]).expect_err("65 s idle over 10 s header");
    assert!(err.contains("--idle-timeout-secs (65)"), "{err}");
    let lb = serve(&[
        "--idle-timeout-secs",
        "65",
        "--header-read-timeout-secs",
        "70",
    ])
    .expect("65 s idle under 70 s header");
    assert_eq!(lb.idle_timeout, Some(Duration::from_secs(65)));
}

#[test]
fn rate_limit_groups_parse_with_precise_errors() {
    assert_eq!(
        parse_group_limits("partners=1000/2000,0/0"),
        Ok(GroupLimits {
            name: "partners".to_owned(),
            limits: CallerLimits {
                requests: Limit::new(1000, 2000),
                read_units: Limit::OFF,
            },
        })
    );
    for (bad, needle) in [
        ("partners", "no `=`"),
        ("=1/2,3/4", "name is empty"),
        ("p=1/2", "no `,`"),
        ("p=12,3/4", "request limit `12` has no `/`"),
        ("p=1/2,x/4", "read-unit rate `x`"),
        ("p=1/-2,3/4", "request burst `-2`"),
    ] {
        let err = parse_group_limits(bad).unwrap_err();
        assert!(err.contains(needle), "{bad}: {err}");
    }
    let cli = Cli::try_parse_from([
        "dynarelay",
        "serve",
        "--model",
        "m.toml",
        "--rate-limit-group",
        "a=1/2,3/4",
        "--rate-limit-group",
        "a=5/6,7/8",
        "--trusted-proxies",
        "10.0.0.0/8,192.0.2.7",
    ])
    .unwrap();
    let Command::Serve(args) = cli.command else {
        unreachable!()
    };
    assert_eq!(args.api.rate_limits().trusted_proxies.len(), 2);
    assert!(
        args.api
            .validate()
            .unwrap_err()
            .to_string()
            .contains("`a` twice")
    );
    assert!(parse_proxy("10.0.0.0/33").is_err());
}

#[test]
fn addresses_are_limited_once_the_load_balancers_are_named() {
    let limit_addresses = |flags: &[&str]| {
        let cli = Cli::try_parse_from(
            ["dynarelay", "serve", "--model", "m.toml"]
                .iter()
                .chain(flags),
        )
        .unwrap();
        let Command::Serve(args) = cli.command else {
            unreachable!()
        };
        args.api.rate_limits().limit_addresses
    };
    assert!(!limit_addresses(&[]));
    assert!(limit_addresses(&["--trusted-proxies", "10.0.0.0/8"]));
    assert!(limit_addresses(&["--rate-limit-addresses", "on"]));
    assert!(!limit_addresses(&[
        "--rate-limit-addresses",
        "off",
        "--trusted-proxies",
        "10.0.0.0/8"
    ]));
}

#[test]
fn policy_regions_and_accounts_are_checked() {
    assert!(parse_region("eu-west-1").is_ok() && parse_region("*").is_ok());
    assert!(parse_region("eu west").is_err() && parse_region("").is_err());
    assert!(parse_account("123456789012").is_ok() && parse_account("*").is_ok());
    assert!(parse_account("12345").is_err() && parse_account("12345678901a").is_err());
}

#[test]
fn table_prefixes_are_checked() {
    assert!(parse_prefix("t42_").is_ok());
    assert!(parse_prefix("").is_ok());
    assert!(parse_prefix("bad prefix").is_err());
    assert!(parse_prefix(&"a".repeat(201)).is_err());
}

#[test]
fn lease_table_names_are_checked() {
    assert!(parse_table_name(crate::stream::leases::DEFAULT_TABLE).is_ok());
    for bad in ["no", "a lease table", &"a".repeat(56)] {
        assert!(parse_table_name(bad).is_err(), "{bad}");
    }
    // On the command line, as a usage error naming the flag.
    let refused = Cli::try_parse_from([
        "dynarelay",
        "relay",
        "--redis-url",
        "redis://x",
        "--lease-table",
        "a b",
    ])
    .unwrap_err();
    assert!(refused.to_string().contains("--lease-table"), "{refused}");
}

//! `[vars]`: lines `KEY=VALUE` → Config and EXTENDER_AUTH; never a panic, and whatever is
//! accepted passes validation again.
#![no_main]
use std::collections::HashMap;

use aco_core::access::ExtenderAuth;
use aco_core::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let vars: HashMap<String, String> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.to_string()))
        .collect();
    if let Ok(c) = Config::from_vars(|k| vars.get(k).cloned()) {
        c.validate().expect("an accepted config validates");
        for t in ["a", "team-x", ""] {
            let _ = c.tenant_allowed(t);
        }
    }
    if let Ok(auth) = ExtenderAuth::from_vars(|k| vars.get(k).cloned()) {
        let token = vars.get("TOKEN").map(String::as_str);
        let _ = auth.check(token, None);
    }
});

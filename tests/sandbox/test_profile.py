import pytest

from envgym.sandbox import DEFAULT, STRICT, SandboxProfile, SpecRejected, validate_spec
from envgym.sandbox.profile import container_spec


def spec(profile=DEFAULT):
    return container_spec(profile, "img", {"envgym.run": "r"})


def test_default_profile_is_hardened():
    s = spec()
    hc = s["HostConfig"]
    assert hc["Init"] is True and hc["NetworkMode"] == "none" and s["NetworkDisabled"] is True
    assert hc["CapDrop"] == ["ALL"] and not hc.get("CapAdd")
    assert hc["SecurityOpt"] == ["no-new-privileges"]
    assert hc["PidsLimit"] == DEFAULT.pids_limit
    assert hc["Memory"] == hc["MemorySwap"] == 1 << 30
    assert hc["NanoCpus"] == 1_000_000_000
    assert {u["Name"] for u in hc["Ulimits"]} == {"fsize", "nofile"}
    assert hc["LogConfig"]["Type"] == "none"
    assert hc["Privileged"] is False and "Binds" not in hc and "Devices" not in hc and "Mounts" not in hc
    assert s["Cmd"] == ["sleep", str(DEFAULT.lifetime_s)]
    assert s["Labels"] == {"envgym.run": "r"}


def test_strict_profile_is_non_root_read_only_with_capped_tmpfs():
    s = spec(STRICT)
    assert s["User"] == "65534:65534"
    assert s["HostConfig"]["ReadonlyRootfs"] is True
    assert all("size=" in opts for opts in s["HostConfig"]["Tmpfs"].values())
    assert "WorkingDir" not in s  # a tmpfs workdir would be re-created root-owned


@pytest.mark.parametrize(("host_config", "opt_in"), [
    ({"Privileged": True}, "privileged"),
    ({"NetworkMode": "host"}, "host_namespaces"),
    ({"PidMode": "host"}, "host_namespaces"),
    ({"IpcMode": "container:abc"}, "host_namespaces"),
    ({"UsernsMode": "host"}, "host_namespaces"),
    ({"Binds": ["/var/run/docker.sock:/var/run/docker.sock"]}, "docker_socket"),
    ({"Mounts": [{"Type": "bind", "Source": "/run/docker.sock", "Target": "/s"}]}, "docker_socket"),
    ({"CapAdd": ["SYS_ADMIN"]}, "cap_add"),
    ({"Devices": [{"PathOnHost": "/dev/kvm"}]}, "devices"),
    ({"Binds": ["/home:/home"]}, "binds"),
    ({"SecurityOpt": ["seccomp=unconfined"]}, "unconfined"),
])
def test_validator_refuses_unless_opted_in(host_config, opt_in):
    with pytest.raises(SpecRejected, match=opt_in):
        validate_spec({"HostConfig": host_config})
    validate_spec({"HostConfig": host_config}, allow={opt_in})


def test_profiles_pass_through_the_validator():
    risky = SandboxProfile(extra_host_config={"Privileged": True, "CapAdd": ["NET_ADMIN"]})
    with pytest.raises(SpecRejected) as info:
        spec(risky)
    assert "privileged" in str(info.value) and "cap_add" in str(info.value)
    allowed = risky.model_copy(update={"allow": frozenset({"privileged", "cap_add"})})
    assert spec(allowed)["HostConfig"]["Privileged"] is True


def test_spec_rejected_is_a_value_error():
    assert issubclass(SpecRejected, ValueError)

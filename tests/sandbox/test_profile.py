import pytest

from envgym.sandbox import DEFAULT, STRICT, SandboxProfile, SpecRejected, validate_spec
from envgym.sandbox.profile import _bytes, container_spec, tmpfs_size


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


def test_default_profile_bounds_disk_with_a_read_only_root_and_capped_tmpfs():
    hc = spec()["HostConfig"]
    assert hc["ReadonlyRootfs"] is True and "StorageOpt" not in hc
    assert set(hc["Tmpfs"]) == {"/work", "/tmp", "/var/tmp", "/root", "/run"}
    assert sum(tmpfs_size(opts) for opts in hc["Tmpfs"].values()) == _bytes(DEFAULT.disk) == 512 << 20
    assert _bytes(DEFAULT.disk) <= _bytes(DEFAULT.memory) // 2  # tmpfs pages count against the memory limit


def test_a_writable_root_needs_the_storage_drivers_size_limit():
    writable = DEFAULT.model_copy(update={"read_only_root": False, "disk": "2g"})
    with pytest.raises(SpecRejected, match="unbounded_disk"):  # overlay2 on ext4: no size limit to give
        spec(writable)
    hc = container_spec(writable, "img", {}, disk_quota=True)["HostConfig"]
    assert hc["StorageOpt"] == {"size": str((2 << 30) - (512 << 20))}  # disk minus what the tmpfs mounts hold
    opted = writable.model_copy(update={"allow": frozenset({"unbounded_disk"})})
    assert "StorageOpt" not in spec(opted)["HostConfig"]
    with pytest.raises(SpecRejected, match="more than its disk"):
        spec(DEFAULT.model_copy(update={"disk": "100m"}))


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
    ({"ReadonlyRootfs": False}, "unbounded_disk"),
    ({"Tmpfs": {"/tmp": "rw,mode=1777"}}, "unbounded_disk"),
    ({"Tmpfs": {"/tmp": "rw,size=50%"}}, "unbounded_disk"),
])
def test_validator_refuses_unless_opted_in(host_config, opt_in):
    host_config = {"ReadonlyRootfs": True, **host_config}
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


def test_a_fixed_hostname_is_set_and_checked():
    assert "Hostname" not in container_spec(DEFAULT, "img", {})  # Docker's default: the container id
    fixed = DEFAULT.model_copy(update={"hostname": "desktop"})
    assert container_spec(fixed, "img", {})["Hostname"] == "desktop"
    with pytest.raises(ValueError, match="hostname"):
        SandboxProfile(hostname="Not A Host!")

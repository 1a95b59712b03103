"""The lab's local Debian repository repacks big packages uncompressed:
the same files, owners, modes, control files and maintainer scripts, as
dpkg sees them; only the members are not compressed (real dpkg-deb)."""

import os
import subprocess

from k8s_mgmt_lab.machines import prereq


def _deb(tmp_path):
    root = tmp_path / 'pkg'
    (root / 'DEBIAN').mkdir(parents=True)
    (root / 'DEBIAN' / 'control').write_text(
        'Package: k8s-mgmt-repack-test\nVersion: 1.0-1\nArchitecture: all\n'
        'Maintainer: test <t@invalid>\nDescription: repack test\n')
    postinst = root / 'DEBIAN' / 'postinst'
    postinst.write_text('#!/bin/sh\nexit 0\n')
    postinst.chmod(0o755)
    tool = root / 'usr' / 'bin' / 'tool'
    tool.parent.mkdir(parents=True)
    tool.write_bytes(os.urandom(4096))
    tool.chmod(0o4755)
    os.chown(tool, 0, 7)      # setuid, a group of its own, as packaged
    deb = tmp_path / 'in.deb'
    subprocess.run(['dpkg-deb', '-Zxz', '--build', str(root), str(deb)],
                   check=True, capture_output=True)
    return deb


def _listing(deb):
    return subprocess.run(['dpkg-deb', '-c', str(deb)], check=True,
                          capture_output=True, text=True).stdout.splitlines()


def test_a_repacked_package_is_the_same_package_uncompressed(tmp_path):
    source = _deb(tmp_path)
    target = tmp_path / 'out.deb'
    prereq.repack_uncompressed(str(source), str(target))
    members = subprocess.run(['ar', 't', str(target)], check=True,
                             capture_output=True, text=True).stdout.split()
    assert members == ['debian-binary', 'control.tar', 'data.tar']
    # Same files, owners and modes (the dates too).
    assert _listing(target) == _listing(source)
    for field in ('Package', 'Version', 'Maintainer'):
        assert subprocess.run(
            ['dpkg-deb', '-f', str(target), field], check=True,
            capture_output=True).stdout == subprocess.run(
            ['dpkg-deb', '-f', str(source), field], check=True,
            capture_output=True).stdout
    scripts = subprocess.run(['dpkg-deb', '--ctrl-tarfile', str(target)],
                             check=True, capture_output=True).stdout
    assert b'postinst' in scripts
    assert not os.path.exists(str(target) + '.tree')

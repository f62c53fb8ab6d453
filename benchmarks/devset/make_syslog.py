"""Writes a deterministic syslog of a small mail relay host: one day of routine lines with a few incidents.

    python -m benchmarks.devset.make_syslog OUT_FILE [--seed 23] [--lines 420]

The lines look like what rsyslog writes on a Debian host ("Mar  9 06:14:02 relay-02 postfix/smtp[2314]: ...").
Most are routine: mail delivered and received by Postfix, IMAP logins to Dovecot, cron jobs, sshd sessions of the
operators. A few distinctive events sit at fixed fractions of the file, and the development questions ask about
them: the boot (kernel, host, IP address), a brute-force attempt on ssh that fail2ban bans, a remote mail server
that defers mail, a disk that fills, an operator's Postfix change and reload, a TLS certificate renewal, the
nightly backup and a kernel I/O error on a second disk. Routine lines never repeat those events' numbers or names.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

from .generated import events_by_line, generator_main, write_lines

START = datetime(2025, 3, 9, 5, 58, 0)
HOST = "relay-02"
DAY_SECONDS = 17 * 3600  # the log covers about seventeen hours

# (fraction of the file, [(program[pid], message), ...]) -- the distinctive events.
EVENTS: list[tuple[float, list[tuple[str, str]]]] = [
    (
        0.0,
        [
            ("kernel", "Linux version 6.1.0-31-amd64 (debian-kernel@lists.debian.org) #1 SMP Debian 6.1.128-1"),
            ("kernel", "Memory: 3985420K/4193784K available (16384K kernel code, 2388K rwdata)"),
            ("systemd[1]", "Reached target network-online.target - Network is Online."),
            ("systemd-networkd[412]", "ens3: DHCPv4 address 10.40.7.12/24, gateway 10.40.7.1 acquired from 10.40.7.1"),
            ("postfix/master[903]", "daemon started -- version 3.7.11, configuration /etc/postfix"),
            ("dovecot[911]", "master: Dovecot v2.3.19.1 (9b53102964) starting up for imap, lmtp"),
            ("fail2ban-server[918]", "Server ready; jails: sshd, postfix-sasl"),
        ],
    ),
    (
        0.14,
        [
            ("sshd[4418]", "Failed password for invalid user admin from 203.0.113.77 port 51144 ssh2"),
            ("sshd[4420]", "Failed password for invalid user oracle from 203.0.113.77 port 51172 ssh2"),
            ("sshd[4423]", "Failed password for invalid user test from 203.0.113.77 port 51190 ssh2"),
            ("sshd[4425]", "Failed password for root from 203.0.113.77 port 51206 ssh2"),
            ("sshd[4427]", "Failed password for invalid user ubuntu from 203.0.113.77 port 51231 ssh2"),
            ("fail2ban.actions[918]", "NOTICE  [sshd] Ban 203.0.113.77 (5 failures in 600 seconds, bantime 3600)"),
        ],
    ),
    (
        0.27,
        [
            (
                "postfix/smtp[5102]",
                "7C1E23A41B: to=<orders@harbourline-freight.example>, relay=mx.harbourline-freight.example"
                "[198.51.100.40]:25, delay=312, status=deferred (host mx.harbourline-freight.example said: 451 4.7.1 "
                "Greylisted, please retry in 300 seconds)",
            ),
            ("postfix/qmgr[907]", "queue size 184 messages, 41 deferred (threshold 25 exceeded)"),
        ],
    ),
    (
        0.38,
        [
            ("CRON[6011]", "(root) CMD (/usr/local/sbin/mailstats --daily >/dev/null)"),
            ("kernel", "EXT4-fs warning (device vdb1): ext4_dx_add_entry: Directory index full!"),
            ("monit[880]", "'var_spool' space usage 93.4% matches resource limit [space usage > 90.0%]"),
            ("postfix/postdrop[6032]", "warning: not enough free space in queue file system (62 MB available)"),
        ],
    ),
    (
        0.46,
        [
            ("sudo[6120]", "mkowalski : TTY=pts/1 ; PWD=/etc/postfix ; USER=root ; COMMAND=/usr/bin/vi main.cf"),
            (
                "postfix/postfix-script[6188]",
                "refreshing the Postfix mail system (message_size_limit changed from 10240000 to 52428800)",
            ),
            ("postfix/master[903]", "reload -- version 3.7.11, configuration /etc/postfix"),
        ],
    ),
    (
        0.58,
        [
            ("certbot[7304]", "Renewing an existing certificate for mail.relay-02.example"),
            ("certbot[7304]", "Successfully renewed certificate; it expires on 2025-06-07 (89 days)"),
            ("dovecot[911]", "master: Warning: SIGHUP received - reloading configuration"),
        ],
    ),
    (
        0.71,
        [
            ("kernel", "blk_update_request: I/O error, dev sdc, sector 1953512 op 0x1:(WRITE) flags 0x800"),
            ("kernel", "Buffer I/O error on dev sdc1, logical block 244183, lost async page write"),
            ("smartd[872]", "Device: /dev/sdc [SAT], 8 Currently unreadable (pending) sectors"),
        ],
    ),
    (
        0.86,
        [
            ("CRON[9120]", "(backup) CMD (/usr/local/bin/restic-mail-backup)"),
            ("restic-mail-backup[9121]", "snapshot 4f2a9c1e saved: 12873 files, 6.412 GiB added, took 27m 44s"),
            (
                "restic-mail-backup[9121]",
                "repository sftp:backup@vault-1.example:/srv/restic/relay-02 checked, no errors",
            ),
        ],
    ),
    (
        1.0,
        [
            ("systemd[1]", "Stopping postfix@-.service - Postfix Mail Transport Agent (instance -)..."),
            ("systemd-logind[640]", "The system will reboot now!"),
        ],
    ),
]

_USERS = ("anna", "brecht", "chiara", "dmitri", "elif", "farouk", "greta", "hiro")
_DOMAINS = ("example.org", "example.net", "lists.example.com", "shop.example", "uni.example.edu")


def _routine(rng: random.Random) -> tuple[str, str]:
    kind = rng.random()
    queue_id = f"{rng.getrandbits(40):010X}"
    pid = rng.randint(1200, 9900)
    if kind < 0.30:
        to = f"{rng.choice(_USERS)}@{rng.choice(_DOMAINS)}"
        delay = f"{rng.uniform(0.2, 4.5):.1f}"
        relay = f"mx.{to.split('@')[1]}:25"
        status = "status=sent (250 2.0.0 OK)"
        return f"postfix/smtp[{pid}]", f"{queue_id}: to=<{to}>, relay={relay}, delay={delay}, {status}"
    if kind < 0.50:
        sender = f"{rng.choice(_USERS)}@{rng.choice(_DOMAINS)}"
        size = rng.randint(1800, 90000)
        return "postfix/qmgr[907]", f"{queue_id}: from=<{sender}>, size={size}, nrcpt=1 (queue active)"
    if kind < 0.65:
        user = rng.choice(_USERS)
        ip = f"192.0.2.{rng.randint(10, 250)}"
        session = f"{rng.getrandbits(48):012x}"
        return f"dovecot[{pid}]", f"imap-login: Login: user=<{user}>, method=PLAIN, rip={ip}, TLS, session=<{session}>"
    if kind < 0.75:
        return f"CRON[{pid}]", "(root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)"
    if kind < 0.85:
        ip = f"192.0.2.{rng.randint(10, 250)}"
        return f"postfix/smtpd[{pid}]", f"connect from unknown[{ip}]"
    if kind < 0.93:
        return f"dovecot[{pid}]", f"lmtp({rng.choice(_USERS)}): saved mail to INBOX"
    return "systemd[1]", "Started sysstat-collect.service - system activity accounting tool."


def syslog_lines(seed: int = 23, lines: int = 420) -> list[str]:
    rng = random.Random(seed)
    events = events_by_line(EVENTS, lines)
    out: list[str] = []
    clock = START
    index = 0
    while len(out) < lines:
        group = events.get(index)
        entries = group if group is not None else [_routine(rng)]
        for program, message in entries:
            clock += timedelta(seconds=rng.randint(1, 2 * DAY_SECONDS // lines))
            stamp = f"{clock.strftime('%b')} {clock.day:2d} {clock.strftime('%H:%M:%S')}"
            out.append(f"{stamp} {HOST} {program}: {message}")
        index += len(entries)
    return out[:lines]


def write_syslog(path: Path, seed: int = 23, lines: int = 420) -> Path:
    return write_lines(path, syslog_lines(seed, lines))


if __name__ == "__main__":
    generator_main(__doc__, write_syslog, "mail-relay.log", seed=23, lines=420)

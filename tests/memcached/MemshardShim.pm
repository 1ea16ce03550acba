package MemshardShim;
# Loaded by scripts/memcached-tests before each test file of memcached's own
# t/ directory (perl -I<this dir> -MMemshardShim t/x.t, run from the top of
# memcached's extracted source). It loads memcached's t/lib/MemcachedTest.pm
# unchanged, then replaces its new_memcached() so that the tests talk to
# the memcached-debug that scripts/memcached-tests built from the same
# source (./memcached-debug, where MemcachedTest looks for it) on a loopback
# TCP port:
#
#   MEMSHARD_T_MODE=direct  the test's socket goes to memcached itself
#   MEMSHARD_T_MODE=proxy   memcached is started the same way, memshard
#                           ($MEMSHARD_T_BIN) is started in front of it with
#                           a one-pool config, and the socket goes to memshard
#
# Both modes start memcached with the same arguments and the same transport
# (TCP on 127.0.0.1), so the only difference between the two runs of a file
# is memshard. Why a module loaded first rather than a patched copy: the
# tests say `use lib "$Bin/lib"`, which puts t/lib ahead of anything on
# PERL5LIB, but `use MemcachedTest` loads nothing when %INC already has it;
# and the tests import new_memcached when they `use` the module, which is
# after this module replaced it. memcached's files stay as extracted.
#
# Each assertion is also written to $MEMSHARD_T_ASSERTS, with the lines of
# the test file on its call stack: assertion numbers shift between the two
# runs when a test asserts once per reply frame of a `stats` (binary.t), so
# scripts/memcached-tests matches the runs' assertions by where in the test
# file they were made, not by number.
#
# $MEMSHARD_T_WORK is a directory for memshard's configs and logs.
use strict;
use warnings;
use Cwd qw(getcwd);
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Carp qw(croak);

BEGIN {
    # cwd is memcached's source root, as for `make test`.
    my $lib = getcwd() . "/t/lib/MemcachedTest.pm";
    require $lib;
    $INC{'MemcachedTest.pm'} = $lib;
}

my $mode = $ENV{MEMSHARD_T_MODE} || 'direct';
my $memshard = $ENV{MEMSHARD_T_BIN};
my $work = $ENV{MEMSHARD_T_WORK} || croak("MEMSHARD_T_WORK is not set");
my $memcached = getcwd() . '/memcached-debug';
croak("MEMSHARD_T_MODE must be direct or proxy") unless $mode =~ /^(direct|proxy)$/;
croak("MEMSHARD_T_BIN (the memshard binary) is not executable") if $mode eq 'proxy' && !($memshard && -x $memshard);

my $original_new_memcached = \&MemcachedTest::new_memcached;
my @started;   # every pid this test started, killed at the end whatever happens
my $instance = 0;
(my $test_name = $0) =~ s{.*/}{};

my %server_of;   # memshard's port -> the port of the memcached behind it

{
    no warnings 'redefine';
    *MemcachedTest::new_memcached = \&new_memcached;
    if ($mode eq 'proxy') {
        *MemcachedTest::mem_move_time = \&mem_move_time;
        *MemcachedTest::mem_stats = \&mem_stats;
    }
}

# The test harness's own levers on the server, through memshard: they act
# on memcached itself, on a connection of their own, and the test's
# assertions still go through memshard.
#
# mem_move_time: `debugtime N` (a memcached-debug command) moves the
# server's clock, so that expirations.t need not sleep. memshard keeps no
# clock of its own for items, and does not forward debugging commands.
sub server_conn {
    my ($sock) = @_;
    my $port = $server_of{ $sock->peerport } or croak("memshard shim: no memcached behind port " . $sock->peerport);
    return IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port") || croak("connect to memcached on $port: $!");
}

sub mem_move_time {
    my ($sock, $move) = @_;
    my $conn = server_conn($sock);
    print $conn "debugtime $move\r\n";
    return scalar <$conn>;
}

# mem_stats: the tests that use extstore (the server's disk tier) wait until
# memcached has written their items to disk by polling its `stats items`
# (MemcachedTest::wait_ext_flush, metaget.t's wait_for_ext). memshard's own
# `stats` does not have the server's groups: `stats items` is ERROR, so those
# waits read the server. Every other mem_stats, those whose result a test
# asserts on, goes through memshard; scripts/memcached-tests skips the
# assertions on the server's counters, each with its reason. An ERROR ends
# the reply as END does (MemcachedTest's mem_stats waits for END alone, and
# would wait forever), and the assertions on it fail rather than hang.
sub mem_stats {
    my ($sock, $type) = @_;
    my $caller = (caller(1))[3] // '';
    $sock = server_conn($sock) if $caller =~ /::(wait_ext_flush|wait_for_ext)$/;
    $type = $type ? " $type" : "";
    print $sock "stats$type\r\n";
    my $stats = {};
    while (<$sock>) {
        last if /^(\.|END|ERROR)/;
        /^(STAT|ITEM) (\S+)\s+([^\r\n]+)/;
        $stats->{$2} = $3;
    }
    return $stats;
}

# One line per assertion: number, 1 if it passed, and the test file's lines
# on the call stack (outermost first), e.g. "345\t0\t96,100".
if (my $path = $ENV{MEMSHARD_T_ASSERTS}) {
    require Test::Builder;
    open(my $asserts, '>', $path) or croak("write $path: $!");
    $asserts->autoflush(1);
    my $ok = \&Test::Builder::ok;
    no warnings 'redefine';
    *Test::Builder::ok = sub {
        my @lines;
        for (my $i = 0; my @frame = caller($i); $i++) {
            unshift @lines, $frame[2] if $frame[1] eq $0;
        }
        # One frame more between the assertion and Test::Builder: its
        # diagnostics still name the test's own line.
        local $Test::Builder::Level = $Test::Builder::Level + 1;
        my $passed = $ok->(@_);
        printf $asserts "%d\t%d\t%s\n", $_[0]->current_test, $passed ? 1 : 0, join(',', @lines);
        return $passed;
    };
}

# Child processes are in the test's process group too (scripts/memcached-tests
# kills the group after each file); this covers a test that exits normally
# while a handle is still referenced.
END {
    kill 'KILL', @started if @started;
}

# The inodes of the sockets open in process $pid.
sub socket_inodes {
    my ($pid) = @_;
    my %inode;
    opendir(my $fds, "/proc/$pid/fd") or return {};
    for (readdir $fds) {
        my $target = readlink("/proc/$pid/fd/$_") // next;
        $inode{$1} = 1 if $target =~ /^socket:\[(\d+)\]$/;
    }
    closedir($fds);
    return \%inode;
}

# Whether process $pid has a listening TCP socket on $port: its descriptors'
# socket inodes against /proc/net/tcp's LISTEN entries (state 0A). A
# connection that succeeds says only that something listens there, maybe a
# server another run started on the same port. This process's own sockets
# do not count: the child has them from fork until it execs.
sub listens {
    my ($pid, $port) = @_;
    my %inode = %{ socket_inodes($pid) };
    delete @inode{ keys %{ socket_inodes($$) } };
    for my $table ('/proc/net/tcp', '/proc/net/tcp6') {
        open(my $fh, '<', $table) or next;
        while (<$fh>) {
            my @f = split;
            next unless @f > 9 && $f[1] =~ /:([0-9A-F]{4})$/ && hex($1) == $port && $f[3] eq '0A';
            return 1 if $inode{ $f[9] };
        }
    }
    return 0;
}

# Waits until process $pid listens on $port and returns a connection to it;
# undef when the process exited first.
sub wait_port {
    my ($port, $pid, $what) = @_;
    for (1 .. 400) {    # 20 s at most, as MemcachedTest waits for memcached
        if (listens($pid, $port)) {
            my $conn = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port");
            return $conn if $conn;
        }
        return undef if waitpid($pid, WNOHANG) != 0;
        select undef, undef, undef, 0.05;
    }
    croak("Failed to startup/connect: $what did not listen on 127.0.0.1:$port");
}

# Starts a server on a free port: $start->($port) spawns it and returns its
# pid and what to call it. free_port only checks that the port was free a
# moment ago: another run side by side (scripts/memcached-tests --jobs) or
# an outgoing connection's ephemeral port may take it before the server
# binds it, and the server exits. So a server that exits before it listens
# is tried again on another port, three times in all. Returns the port, the
# pid and a connection to it.
sub start_on_free_port {
    my ($start) = @_;
    my $what;
    for my $attempt (1 .. 3) {
        my $port = MemcachedTest::free_port();
        (my $pid, $what) = $start->($port);
        my $conn = wait_port($port, $pid, $what);
        return ($port, $pid, $conn) if $conn;
    }
    # "Failed..." as MemcachedTest says it: item_size_max.t checks that
    # memcached refuses to start by that word.
    croak("Failed to connect: $what exited before it listened, three times");
}

sub spawn {
    my ($log, @cmd) = @_;
    my $pid = fork();
    croak("fork: $!") unless defined $pid;
    if (!$pid) {
        if ($log) {
            open(STDOUT, '>>', $log) or die "open $log: $!";
            open(STDERR, '>&', \*STDOUT) or die "dup: $!";
        }
        exec { $cmd[0] } @cmd or die "exec $cmd[0]: $!";
    }
    push @started, $pid;
    return $pid;
}

# memcached's -I: bytes, or a number with k or m (as memcached parses it).
sub item_size_bytes {
    my ($v) = @_;
    return $1 * 1024 if $v =~ /^(\d+)k$/i;
    return $1 * 1024 * 1024 if $v =~ /^(\d+)m$/i;
    return $v if $v =~ /^\d+$/;
    croak("cannot read -I $v");
}

sub new_memcached {
    my ($args, $passed_port) = @_;
    $args = '' unless defined $args;

    # A test that chooses where memcached listens (-l, -p, -s), daemonizes
    # it or speaks TLS tests memcached's listeners, not its protocol; those
    # files are in the skip table of scripts/memcached-tests. Directly they
    # may still run on memcached's own harness.
    if ($args =~ /(^|\s)-[lpsdZ](\s|$)/ || $passed_port || MemcachedTest::enabled_tls_testing()) {
        return $original_new_memcached->(@_) if $mode eq 'direct';
        croak("memshard shim: cannot put memshard in front of memcached $args");
    }

    $instance++;
    my $mc_args = $args;
    # The binary protocol is memshard's to speak with the client: it talks
    # text and meta commands to its servers, so memcached keeps its default
    # (-B auto) behind it. A `-B binary` memcached refuses text, and memshard
    # would not reach it at all.
    $mc_args =~ s/(^|\s)-B\s+\S+//g if $mode eq 'proxy';
    # As MemcachedTest does: run as root when root, relaxed privileges (a
    # memcached-debug option); and no UDP.
    $mc_args .= " -u root" if $< == 0;
    $mc_args .= " -o relaxed_privileges";
    $mc_args .= " -U 0" unless $mc_args =~ /(^|\s)-U\s/;
    my ($mc_port, $mc_pid, $mc_conn) = start_on_free_port(sub {
        my ($port) = @_;
        my $all = "$mc_args -l 127.0.0.1 -p $port";
        return (spawn(undef, $memcached, split(' ', $all)), "memcached $all");
    });

    if ($mode eq 'direct') {
        return Memcached::ShimHandle->new(pid => $mc_pid, pids => [$mc_pid], conn => $mc_conn,
                                          host => '127.0.0.1', port => $mc_port);
    }
    close($mc_conn);

    # One pool, one server: every key goes to this memcached, so a test's
    # view of the data is the server's. item_size_max follows memcached's -I
    # (memshard refuses larger values itself, as memcached would).
    my $item_size_max = ($args =~ /(?:^|\s)-I\s+(\S+)/) ? item_size_bytes($1) : 1024 * 1024;
    my $conf = "$work/$test_name.$instance.yml";
    my $log = "$work/$test_name.$instance.memshard.log";
    my ($port, $ms_pid, $conn) = start_on_free_port(sub {
        my ($port) = @_;
        open(my $fh, '>', $conf) or croak("write $conf: $!");
        print $fh <<"YML";
memcached_t:
  listen: 127.0.0.1:$port
  hash: fnv1a_64
  distribution: ketama
  item_size_max: $item_size_max
  servers:
    - 127.0.0.1:$mc_port:1
YML
        close($fh) or croak("write $conf: $!");
        return (spawn($log, $memshard, '-c', $conf, '-s', '0'), "memshard -c $conf (log: $log)");
    });
    $server_of{$port} = $mc_port;
    return Memcached::ShimHandle->new(pid => $ms_pid, pids => [$ms_pid, $mc_pid], conn => $conn,
                                      host => '127.0.0.1', port => $port);
}

############################################################################
# A handle whose pid is memshard's (or memcached's when direct) and that
# stops memcached too. sock/new_sock/host/port are MemcachedTest's.
package Memcached::ShimHandle;
our @ISA = ('Memcached::Handle');

sub DESTROY {
    my $self = shift;
    kill 'INT', @{ $self->{pids} };
}

sub stop {
    my $self = shift;
    kill 'TERM', @{ $self->{pids} };
}

sub graceful_stop {
    my $self = shift;
    kill 'USR1', @{ $self->{pids} };
}

1;

#!/usr/bin/perl
# The side-by-side report of scripts/memcached-tests:
#
#   report.pl RESULTS_DIR [--verbose]
#
# Prints a short report: per test file, the assertions passed and failed
# against memcached alone and through memshard, the totals, and every
# assertion that passes directly and fails (or never runs) through memshard
# without being a known difference. Writes the full report, which adds every
# file run in neither mode and every known difference with its reason, to
# RESULTS_DIR/report.txt (--verbose prints that one instead).
# Exits 1 when an assertion passes directly only and is not known, or when
# a file that runs passed no assertion directly (the harness itself is
# broken then, and there would be nothing to compare); 0 otherwise.
#
# The results directory:
#   files.tsv              one line per test file, in run order:
#                          file<TAB>run|skip|skiprun<TAB>reason (skiprun: a
#                          skipped file run all the same, --run-skipped;
#                          shown, but neither counted nor failing the run)
#   skips.tsv              known differences, assertions in files that run:
#                          file<TAB>lines (96-101,443)<TAB>reason: an
#                          assertion is known when one of these lines of
#                          the test file is on its call stack; through
#                          memshard it counts as neither passed nor failed
#   varies.tsv             assertions made once per frame of a reply whose
#                          length is the server's: file<TAB>lines<TAB>reason
#   directknown.tsv        assertions that fail against memcached alone by
#                          how the script runs it: file<TAB>lines<TAB>reason
#   <file>.<mode>.tap      the file's TAP output, mode direct or proxy
#   <file>.<mode>.asserts  its assertions, one a line (MemshardShim.pm):
#                          number<TAB>passed (1 or 0)<TAB>lines of the test
#                          file on its call stack; an assertion is the same
#                          in both runs when it has the same lines and is
#                          the same occurrence of them (numbers shift when a
#                          test asserts once per reply frame of a stats)
#   <file>.<mode>.rc       its exit status (124: killed at the time limit)
#   <file>.<mode>.secs     how long it took
#   header                 the report's first line (scripts/memcached-tests)
use strict;
use warnings;
use TAP::Parser;

my ($dir, $verbose);
for (@ARGV) {
    if ($_ eq '--verbose') { $verbose = 1 }
    elsif (!defined $dir) { $dir = $_ }
    else { die "usage: $0 RESULTS_DIR [--verbose]\n" }
}
die "usage: $0 RESULTS_DIR [--verbose]\n" unless defined $dir;

sub slurp {
    my ($path) = @_;
    open(my $fh, '<', $path) or return undef;
    local $/;
    my $text = <$fh>;
    return $text;
}

sub line_set {
    my ($spec) = @_;
    my %n;
    for my $part (split /,/, $spec) {
        if ($part =~ /^(\d+)-(\d+)$/) { $n{$_} = 1 for $1 .. $2 }
        elsif ($part =~ /^\d+$/) { $n{$part} = 1 }
        else { die "bad line numbers '$spec' in skips.tsv\n" }
    }
    return \%n;
}

sub table {
    my ($name) = @_;
    my (%lines, @rows);
    for (split /\n/, slurp("$dir/$name") // '') {
        next unless length;
        my ($file, $spec, $reason) = split /\t/, $_, 3;
        push @rows, [$file, $spec, $reason];
        $lines{$file}{$_} = $reason for keys %{ line_set($spec) };
    }
    return (\%lines, \@rows);
}
# The known differences: file -> { line -> reason }.
my ($assert_skip, $skip_rows) = table('skips.tsv');
# Assertions whose count follows the length of a reply: file -> { line -> reason }.
my ($assert_vary, $vary_rows) = table('varies.tsv');
# Known failures against memcached alone: file -> { line -> reason }.
my ($direct_known, $direct_known_rows) = table('directknown.tsv');

sub key_lines { my ($key) = @_; return split /,/, (split /#/, $key)[0] }
sub varies {
    my ($file, $key) = @_;
    return scalar grep { $assert_vary->{$file}{$_} } key_lines($key);
}
# The reason an assertion ("lines#occurrence") is a known difference, if it is.
sub known {
    my ($file, $key) = @_;
    for (key_lines($key)) {
        return $assert_skip->{$file}{$_} if $assert_skip->{$file}{$_};
    }
    return undef;
}
# Where in the test file: "line 96/100", "(#2)" for a second occurrence.
sub where {
    my ($key) = @_;
    my ($lines, $n) = split /#/, $key;
    return "line " . join('/', split /,/, $lines) . ($n && $n > 1 ? " (#$n)" : '');
}

# One run of one file: its counts, and which assertions passed (keyed
# "lines#occurrence"). Each assertion run is passed, failed, skipped by the
# test itself (TAP's "# skip", as memcached's tests do for what a build
# lacks) or, through memshard, known (the skip table lists it: counted as
# neither passed nor failed, whatever its result).
sub parse_run {
    my ($file, $mode) = @_;
    my $tap = slurp("$dir/$file.$mode.tap");
    return undef unless defined $tap;
    my $rc = slurp("$dir/$file.$mode.rc") // '?';
    my $secs = slurp("$dir/$file.$mode.secs") // '?';
    chomp($rc, $secs);
    my (%ok, %occurrences, %number, %known);
    for (split /\n/, slurp("$dir/$file.$mode.asserts") // '') {
        my ($number, $pass, $lines) = split /\t/, $_, 3;
        $lines //= '';
        my $key = "$lines#" . ++$occurrences{$lines};
        $ok{$key} = $pass;
        $number{$key} = $number;
        $known{$number} = 1 if $mode eq 'proxy' && known($file, $key);
    }
    $tap = "# no output\n" unless length $tap;   # TAP::Parser refuses an empty string
    my $parser = TAP::Parser->new({ tap => $tap });
    my %r = (run => 0, passed => 0, failed => 0, skipped => 0, known => 0, known_failed => 0);
    my ($not_ok, $bailed, %description) = (0, '');
    while (my $t = $parser->next) {
        if ($t->is_test) {
            $r{run}++;
            $description{ $t->number } = $t->description;
            $not_ok++ unless $t->is_ok;
            if ($t->has_skip) { $r{skipped}++ }
            elsif ($known{ $t->number }) { $r{known}++; $r{known_failed}++ unless $t->is_ok }
            elsif ($t->is_ok) { $r{passed}++ }   # a todo counts as passed, as prove says
            else { $r{failed}++ }
        } elsif ($t->is_bailout) {
            $bailed = $t->explanation;
        }
    }
    my $planned = $parser->tests_planned // 0;
    my $not_run = $planned > $r{run} ? $planned - $r{run} : 0;
    my @notes;
    push @notes, "killed at the time limit" if $rc eq '124';
    # Test::More exits with the count of failed assertions (254 at most):
    # another status says something more.
    push @notes, "exit $rc" if $rc ne '124' && $rc ne ($not_ok > 254 ? 254 : $not_ok);
    push @notes, "$not_run of $planned not run" if $not_run;
    push @notes, "bailed out: $bailed" if $bailed;
    push @notes, "skips itself: " . $parser->skip_all if $parser->skip_all;
    push @notes, "$r{skipped} skipped by the test" if $r{skipped};
    return { %r, ok => \%ok, number => \%number, description => \%description,
             planned => $planned, secs => $secs, notes => \@notes };
}

my @files;
my (%file_skip, %skip_run);
for (split /\n/, slurp("$dir/files.tsv") // die "no $dir/files.tsv\n") {
    my ($file, $what, $reason) = split /\t/, $_, 3;
    push @files, $file;
    $file_skip{$file} = $reason if $what eq 'skip';
    $skip_run{$file} = $reason if $what eq 'skiprun';
}
my @counts = qw(passed failed skipped known known_failed);
my %total = map { my $m = $_; $m => { map { $_ => 0 } @counts } } qw(direct proxy);
my (@regressions, @broken, @direct_unknown, %ran, %known_seen);
my $lost_total = 0;
my @table;
my $fmt = "%-24s %7s %6s   %7s %6s %6s  %s";
push @table, sprintf($fmt, '', 'directly', '', 'through', 'memshard', '', '');
push @table, sprintf($fmt, 'test file', 'passed', 'failed', 'passed', 'failed', 'known', 'notes');
for my $file (@files) {
    next if exists $file_skip{$file};
    my $d = parse_run($file, 'direct');
    my $p = parse_run($file, 'proxy');
    my @cells = (($d ? @{$d}{qw(passed failed)} : ('-') x 2), ($p ? @{$p}{qw(passed failed known)} : ('-') x 3));
    my @notes;
    # The same note both ways once.
    my %proxy_note = map { $_ => 1 } $p ? @{ $p->{notes} } : ();
    for my $note ($d ? @{ $d->{notes} } : ()) {
        if ($proxy_note{$note}) { push @notes, $note; delete $proxy_note{$note} }
        else { push @notes, "directly: $note" }
    }
    push @notes, "memshard: $_" for grep { $proxy_note{$_} } ($p ? @{ $p->{notes} } : ());
    if ($d && $d->{failed}) {
        my @where;
        for my $key (sort { $d->{number}{$a} <=> $d->{number}{$b} } grep { !$d->{ok}{$_} } keys %{ $d->{ok} }) {
            if (grep { $direct_known->{$file}{$_} } key_lines($key)) {
                push @where, where($key) . " (known)";
            } else {
                push @where, where($key);
                push @direct_unknown, "$file " . where($key) unless $skip_run{$file};
            }
        }
        push @notes, "fails directly: " . join(', ', @where > 3 ? (@where[0 .. 2], '...') : @where) if @where;
    }
    if ($skip_run{$file}) {
        # Shown for a look at it, as the skip table says why it is skipped.
        push @table, sprintf($fmt, $file, @cells, join('; ', @notes, "SKIPPED FILE, run anyway, not counted"));
        next;
    }
    $ran{$file} = 1;
    if (!$d || !$d->{passed}) {
        push @broken, "$file: no assertion passed against memcached alone (logs: $dir/$file.direct.tap, .err)";
    }
    if ($d && $p) {
        my @lost;
        for my $key (sort { $d->{number}{$a} <=> $d->{number}{$b} } keys %{ $d->{ok} }) {
            next unless $d->{ok}{$key};
            next if $p->{ok}{$key};
            next if known($file, $key);
            # One of a run whose length is the reply's: absent through
            # memshard is fine when it made that run at all, and every one
            # of it passed (a failed one is counted as it is).
            next if varies($file, $key) && !exists $p->{ok}{$key} && exists $p->{ok}{ (split /#/, $key)[0] . "#1" };
            my $number = $p->{number}{$key};
            push @lost, where($key) . (defined $number
                ? ": not ok $number" . ($p->{description}{$number} ? " $p->{description}{$number}" : '')
                : ": never ran");
        }
        push @notes, scalar(@lost) . " pass directly only" if @lost;
        if (@lost) {
            my @shown = @lost > 20 ? (@lost[0 .. 19], "... and " . (@lost - 20) . " more") : @lost;
            push @regressions, "$file (logs: $dir/$file.proxy.tap, .err; memshard's: $dir/work/$file.*.memshard.log)",
                map { "  $_" } @shown;
            $lost_total += @lost;
        }
    }
    for my $m (['direct', $d], ['proxy', $p]) {
        next unless $m->[1];
        $total{ $m->[0] }{$_} += $m->[1]{$_} for @counts;
    }
    $known_seen{$file} = $p->{known} if $p && $p->{known};
    push @table, sprintf($fmt, $file, @cells, join('; ', @notes));
}
push @table, sprintf($fmt, 'total', @{ $total{direct} }{qw(passed failed)}, @{ $total{proxy} }{qw(passed failed known)}, '');
s/\s+$// for @table;

my $d = $total{direct};
my $t = $total{proxy};
my $n_ran = keys %ran;
my @skipped_files = grep { exists $file_skip{$_} } @files;
my @known_rows = grep { $ran{ $_->[0] } } @$skip_rows;
my @vary_rows = grep { $ran{ $_->[0] } } @$vary_rows;

my @short = (@table, '');
push @short, sprintf("known: through memshard, %d assertions on memcached's own state (its stats, settings, log\n"
    . "stream; %d failed, %d passed), by design, counted as neither passed nor failed.",
    $t->{known}, $t->{known_failed}, $t->{known} - $t->{known_failed}) if $t->{known};
push @short, sprintf("%d of %d files run in neither mode: they test the server itself, not the protocol.",
    scalar(@skipped_files), scalar(@files)) if @skipped_files;
push @short, "Each reason: scripts/memcached-tests' tables, or $dir/report.txt (--verbose prints it)."
    if $t->{known} || @skipped_files || $d->{failed};

my @long = (@table, '');
if (@skipped_files) {
    push @long, "files run in neither mode (" . scalar(@skipped_files) . "):";
    push @long, sprintf("  %-26s %s", $_, $file_skip{$_}) for @skipped_files;
    push @long, '';
}
if (@known_rows) {
    push @long, "known differences through memshard (lines of the test file; the assertions with one of",
        "these lines on their call stack count as neither passed nor failed):";
    push @long, map { "  $_->[0]:$_->[1]  $_->[2]" } sort { $a->[0] cmp $b->[0] || $a->[1] cmp $b->[1] } @known_rows;
    push @long, '';
}
my @direct_known_rows = grep { $ran{ $_->[0] } } @$direct_known_rows;
if (@direct_known_rows) {
    push @long, "known failures against memcached alone:";
    push @long, map { "  $_->[0]:$_->[1]  $_->[2]" } @direct_known_rows;
    push @long, '';
}
if (@vary_rows) {
    push @long, "assertions made once per frame of a reply, fewer through memshard (each one made must",
        "pass, and at least one must be made):";
    push @long, map { "  $_->[0]:$_->[1]  $_->[2]" } @vary_rows;
    push @long, '';
}

my @tail;
if (@direct_unknown) {
    push @tail, '', "note: assertions that fail against memcached alone, not known (they say nothing of memshard",
        "and do not fail the run): " . join(', ', @direct_unknown > 10 ? (@direct_unknown[0 .. 9], '...') : @direct_unknown);
}
if (@broken) {
    push @tail, '', "BROKEN: files that ran but passed nothing directly, so nothing to compare:", map { "  $_" } @broken;
}
if (@regressions) {
    push @tail, '', "FAILED: $lost_total assertions pass against memcached alone and not through memshard, and",
        "are not known differences:", map { "  $_" } @regressions;
}
my $status = (@broken || @regressions) ? 'FAILED' : 'ok';
push @tail, '', sprintf("memcached-tests: %s: %d file%s; through memshard %d passed, %d failed, %d known; directly %d passed, %d failed",
    $status, $n_ran, $n_ran == 1 ? '' : 's', $t->{passed}, $t->{failed}, $t->{known}, $d->{passed}, $d->{failed});

for my $lines (\@short, \@long) { pop @$lines while @$lines && $lines->[-1] eq '' }
my $header = slurp("$dir/header") // '';
open(my $full, '>', "$dir/report.txt") or die "write $dir/report.txt: $!\n";
print $full $header, map { "$_\n" } @long, @tail;
close($full) or die "write $dir/report.txt: $!\n";
print map { "$_\n" } $verbose ? (@long, @tail) : (@short, @tail);
exit($status eq 'ok' ? 0 : 1);

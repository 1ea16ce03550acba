#!/usr/bin/perl
# The side-by-side report of scripts/memcached-tests. Reads its results
# directory:
#   files.tsv              one line per test file, in run order:
#                          file<TAB>run|skip|skiprun<TAB>reason (skiprun: a
#                          skipped file run all the same, --run-skipped;
#                          shown, but neither counted nor failing the run)
#   skips.tsv              assertions skipped inside files that run:
#                          file<TAB>lines (96-101,443)<TAB>reason: an
#                          assertion is skipped when one of these lines of
#                          the test file is on its call stack
#   <file>.<mode>.tap      the file's TAP output, mode direct or proxy
#   <file>.<mode>.asserts  its assertions, one a line (MemshardShim.pm):
#                          number<TAB>passed (1 or 0)<TAB>lines of the test
#                          file on its call stack; an assertion is the same
#                          in both runs when it has the same lines and is
#                          the same occurrence of them (numbers shift when a
#                          test asserts once per reply frame of a stats)
#   <file>.<mode>.rc       its exit status (124: killed at the time limit)
#   <file>.<mode>.secs     how long it took
# Prints, per file, tests run / passed / failed directly and through
# memshard, then the totals; lists every assertion that passes directly and
# fails (or never runs) through memshard, other than the skipped ones.
# Exits 1 when there is any such assertion, 0 otherwise.
use strict;
use warnings;
use TAP::Parser;

my $dir = shift or die "usage: $0 RESULTS_DIR\n";

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

# The skip table of assertions.
my %assert_skip;   # file -> { line -> reason }
for (split /\n/, slurp("$dir/skips.tsv") // '') {
    next unless length;
    my ($file, $spec, $reason) = split /\t/, $_, 3;
    $assert_skip{$file}{$_} = $reason for keys %{ line_set($spec) };
}
# Assertions whose count follows the length of a reply (varies.tsv): file ->
# { line -> reason }.
my %assert_vary;
for (split /\n/, slurp("$dir/varies.tsv") // '') {
    next unless length;
    my ($file, $spec, $reason) = split /\t/, $_, 3;
    $assert_vary{$file}{$_} = $reason for keys %{ line_set($spec) };
}
sub varies {
    my ($file, $key) = @_;
    my ($lines) = split /#/, $key;
    return scalar grep { $assert_vary{$file}{$_} } split /,/, $lines;
}
# The skip reason of an assertion ("lines#occurrence"), if one applies.
sub skipped {
    my ($file, $key) = @_;
    my ($lines) = split /#/, $key;
    for (split /,/, $lines) {
        return $assert_skip{$file}{$_} if $assert_skip{$file}{$_};
    }
    return undef;
}

# One run of one file: its counts, and which assertions passed (keyed
# "lines#occurrence"). Of the assertions run, each is passed, failed or
# skipped: skipped when the test itself says so (TAP's "# skip", as
# memcached's tests do for what a build lacks) and, through memshard, when
# the skip table lists it (its result is then not counted either way).
sub parse_run {
    my ($file, $mode) = @_;
    my $tap = slurp("$dir/$file.$mode.tap");
    return undef unless defined $tap;
    my $rc = slurp("$dir/$file.$mode.rc") // '?';
    my $secs = slurp("$dir/$file.$mode.secs") // '?';
    chomp($rc, $secs);
    my (%ok, %occurrences, %number, %table_skip);
    for (split /\n/, slurp("$dir/$file.$mode.asserts") // '') {
        my ($number, $pass, $lines) = split /\t/, $_, 3;
        $lines //= '';
        my $key = "$lines#" . ++$occurrences{$lines};
        $ok{$key} = $pass;
        $number{$key} = $number;
        $table_skip{$number} = 1 if $mode eq 'proxy' && skipped($file, $key);
    }
    $tap = "# no output\n" unless length $tap;   # TAP::Parser refuses an empty string
    my $parser = TAP::Parser->new({ tap => $tap });
    my ($run, $passed, $failed, $skipped, $bailed) = (0, 0, 0, 0, '');
    while (my $r = $parser->next) {
        if ($r->is_test) {
            $run++;
            if ($r->has_skip || $table_skip{ $r->number }) { $skipped++ }
            elsif ($r->is_ok) { $passed++ }   # a todo counts as passed, as prove says
            else { $failed++ }
        } elsif ($r->is_bailout) {
            $bailed = $r->explanation;
        }
    }
    my $planned = $parser->tests_planned // 0;
    my $not_run = $planned > $run ? $planned - $run : 0;
    my @notes;
    push @notes, "killed at the time limit" if $rc eq '124';
    push @notes, "exit $rc" if $rc ne '0' && $rc ne '124';
    push @notes, "$not_run of $planned not run" if $not_run;
    push @notes, "bailed out: $bailed" if $bailed;
    if ($parser->skip_all) {
        push @notes, "skipped whole by the test: " . $parser->skip_all;
    }
    return { run => $run, passed => $passed, failed => $failed, skipped => $skipped, ok => \%ok,
             number => \%number, planned => $planned, secs => $secs, notes => join('; ', @notes) };
}

my @files;
my (%file_skip, %skip_run);
for (split /\n/, slurp("$dir/files.tsv") // die "no $dir/files.tsv\n") {
    my ($file, $what, $reason) = split /\t/, $_, 3;
    push @files, $file;
    $file_skip{$file} = $reason if $what eq 'skip';
    $skip_run{$file} = $reason if $what eq 'skiprun';
}
my @counts = qw(run passed failed skipped);
my %total = map { my $m = $_; $m => { map { $_ => 0 } @counts } } qw(direct proxy);
my ($lost_total, @regressions, @skipped_files, %table_skips) = (0);
my $fmt = "%-26s %6s %6s %6s %6s  %6s %6s %6s %6s  %s\n";
printf $fmt, '', 'direct', '', '', '', 'memshd', '', '', '', '';
printf $fmt, 'test file', 'run', 'passed', 'failed', 'skip', 'run', 'passed', 'failed', 'skip', 'notes';
for my $file (@files) {
    if (exists $file_skip{$file}) {
        push @skipped_files, $file;
        next;
    }
    my $d = parse_run($file, 'direct');
    my $p = parse_run($file, 'proxy');
    my @cells;
    for my $run ($d, $p) {
        push @cells, $run ? @{$run}{@counts} : ('-') x 4;
    }
    my @notes;
    push @notes, "direct: $d->{notes}" if $d && $d->{notes};
    push @notes, "memshard: $p->{notes}" if $p && $p->{notes};
    if ($skip_run{$file}) {
        # Shown for a look at it, as the skip table says why it is skipped.
        push @notes, "SKIPPED FILE, run anyway, not counted";
        printf $fmt, $file, @cells, join('; ', @notes);
        next;
    }
    if ($d && $p) {
        my @lost;
        for my $key (sort { $d->{number}{$a} <=> $d->{number}{$b} } keys %{ $d->{ok} }) {
            next unless $d->{ok}{$key};
            next if $p->{ok}{$key};
            next if skipped($file, $key);
            if (varies($file, $key)) {
                # One of a run whose length is the reply's: absent through
                # memshard is fine when it made that run at all, and every
                # one of it passed (a failed one is counted as it is).
                my ($lines) = split /#/, $key;
                next if !exists $p->{ok}{$key} && exists $p->{ok}{"$lines#1"};
            }
            push @lost, "line " . join('/', split(/,/, $key =~ s/#.*//r)) . ($key =~ /#(\d+)$/ && $1 > 1 ? " (#$1)" : '');
        }
        push @notes, scalar(@lost) . " pass directly only" if @lost;
        # Where in the test file (the line of each call on the stack).
        my @shown = @lost > 20 ? (@lost[0 .. 19], "... and " . (@lost - 20) . " more") : @lost;
        push @regressions, "$file: " . join(', ', @shown) if @lost;
        $lost_total += @lost;
    }
    $table_skips{$file} = $p->{skipped} if $p && $p->{skipped};
    for my $m (['direct', $d], ['proxy', $p]) {
        next unless $m->[1];
        $total{ $m->[0] }{$_} += $m->[1]{$_} for @counts;
    }
    printf $fmt, $file, @cells, join('; ', @notes);
}
printf $fmt, 'total', (map { @{ $total{$_} }{@counts} } qw(direct proxy)), '';

print "\nskipped files, run in neither mode (" . scalar(@skipped_files) . "):\n";
printf "  %-26s %s\n", $_, $file_skip{$_} for @skipped_files;
print "\nskipped assertions through memshard (lines of the test file; the run's\n"
    . "assertions with one of these lines on their call stack):\n";
my %by_file;
my %ran = map { $_ => 1 } grep { !exists $file_skip{$_} } @files;
for (split /\n/, slurp("$dir/skips.tsv") // '') {
    next unless length;
    my ($file, $spec, $reason) = split /\t/, $_, 3;
    next unless $ran{$file};
    push @{ $by_file{$file} }, "  $file:$spec  $reason\n";
}
print sort @{ $by_file{$_} } for sort keys %by_file;
my @varies = grep { length && $ran{ (split /\t/)[0] } } split /\n/, slurp("$dir/varies.tsv") // '';
print "\nassertions made once per frame of a reply, fewer through memshard (not\n"
    . "skipped: each one made must pass, and at least one must be made):\n" if @varies;
for (@varies) {
    my ($file, $spec, $reason) = split /\t/, $_, 3;
    print "  $file:$spec  $reason\n";
}
if (@regressions) {
    print "\nassertions that pass directly and not through memshard (not in the skip table):\n";
    print "  $_\n" for @regressions;
}
my $t = $total{proxy};
my $d = $total{direct};
printf "\ndirect:   %d run, %d passed, %d failed, %d skipped\n", @{$d}{@counts};
printf "memshard: %d run, %d passed, %d failed, %d skipped\n", @{$t}{@counts};
print "($lost_total of the failures through memshard pass directly)\n" if $lost_total;
# The closing line, for CI: through memshard.
printf "\nmemcached-tests: %d passed, %d failed, %d skipped\n", @{$t}{qw(passed failed skipped)};
exit(@regressions ? 1 : 0);

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

# One run of one file: its counts, and which assertions passed (keyed
# "lines#occurrence").
sub parse_run {
    my ($file, $mode) = @_;
    my $tap = slurp("$dir/$file.$mode.tap");
    return undef unless defined $tap;
    my $rc = slurp("$dir/$file.$mode.rc") // '?';
    my $secs = slurp("$dir/$file.$mode.secs") // '?';
    chomp($rc, $secs);
    $tap = "# no output\n" unless length $tap;   # TAP::Parser refuses an empty string
    my $parser = TAP::Parser->new({ tap => $tap });
    my ($run, $passed, $bailed) = (0, 0, '');
    while (my $r = $parser->next) {
        if ($r->is_test) {
            $run++;
            $passed++ if $r->is_ok;   # todo and skip count as passed
        } elsif ($r->is_bailout) {
            $bailed = $r->explanation;
        }
    }
    my $planned = $parser->tests_planned // 0;
    my (%ok, %occurrences, %number);
    for (split /\n/, slurp("$dir/$file.$mode.asserts") // '') {
        my ($number, $pass, $lines) = split /\t/, $_, 3;
        $lines //= '';
        my $key = "$lines#" . ++$occurrences{$lines};
        $ok{$key} = $pass;
        $number{$key} = $number;
    }
    my $not_run = $planned > $run ? $planned - $run : 0;
    my @notes;
    push @notes, "killed at the time limit" if $rc eq '124';
    push @notes, "exit $rc" if $rc ne '0' && $rc ne '124';
    push @notes, "$not_run of $planned not run" if $not_run;
    push @notes, "bailed out: $bailed" if $bailed;
    return { run => $run, passed => $passed, failed => $run - $passed, ok => \%ok, number => \%number,
             planned => $planned, secs => $secs, notes => join('; ', @notes) };
}

my @files;
my (%file_skip, %skip_run);
for (split /\n/, slurp("$dir/files.tsv") // die "no $dir/files.tsv\n") {
    my ($file, $what, $reason) = split /\t/, $_, 3;
    push @files, $file;
    $file_skip{$file} = $reason if $what eq 'skip';
    $skip_run{$file} = $reason if $what eq 'skiprun';
}
my %assert_skip;   # file -> { line -> reason }
for (split /\n/, slurp("$dir/skips.tsv") // '') {
    next unless length;
    my ($file, $spec, $reason) = split /\t/, $_, 3;
    $assert_skip{$file}{$_} = $reason for keys %{ line_set($spec) };
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

my %total = map { $_ => { run => 0, passed => 0, failed => 0 } } qw(direct proxy);
my ($both_pass, $skipped_asserts, $lost_total, @regressions, @skipped_files) = (0, 0, 0);
my $fmt = "%-26s %7s %7s %6s  %7s %7s %6s  %s\n";
printf $fmt, '', 'direct', '', '', 'memshard', '', '', '';
printf $fmt, 'test file', 'run', 'passed', 'failed', 'run', 'passed', 'failed', 'notes';
for my $file (@files) {
    if (exists $file_skip{$file}) {
        push @skipped_files, $file;
        next;
    }
    my $d = parse_run($file, 'direct');
    my $p = parse_run($file, 'proxy');
    my @cells;
    for my $run ($d, $p) {
        push @cells, $run ? ($run->{run}, $run->{passed}, $run->{failed}) : ('-', '-', '-');
    }
    my @notes;
    push @notes, "direct: $d->{notes}" if $d && $d->{notes};
    push @notes, "memshard: $p->{notes}" if $p && $p->{notes};
    if ($skip_run{$file}) {
        # Shown for a look at it, as the skip table says why it is skipped.
        push @notes, "SKIPPED, run anyway: $skip_run{$file}";
        printf $fmt, $file, @cells, join('; ', @notes);
        next;
    }
    if ($d && $p) {
        my (@lost, $skipped_here);
        for my $key (sort { $d->{number}{$a} <=> $d->{number}{$b} } keys %{ $d->{ok} }) {
            next unless $d->{ok}{$key};
            if ($p->{ok}{$key}) { $both_pass++; next; }
            if (skipped($file, $key)) { $skipped_here++; next; }
            push @lost, "line " . join('/', split(/,/, $key =~ s/#.*//r)) . ($key =~ /#(\d+)$/ && $1 > 1 ? " (#$1)" : '');
        }
        $skipped_asserts += $skipped_here // 0;
        push @notes, "$skipped_here skipped (see the skip table)" if $skipped_here;
        push @notes, scalar(@lost) . " pass directly only" if @lost;
        # Where in the test file (the line of each call on the stack).
        my @shown = @lost > 20 ? (@lost[0 .. 19], "... and " . (@lost - 20) . " more") : @lost;
        push @regressions, "$file: " . join(', ', @shown) if @lost;
        $lost_total += @lost;
    }
    for my $m (['direct', $d], ['proxy', $p]) {
        next unless $m->[1];
        $total{ $m->[0] }{$_} += $m->[1]{$_} for qw(run passed failed);
    }
    printf $fmt, $file, @cells, join('; ', @notes);
}
printf $fmt, 'total', (map { @{ $total{$_} }{qw(run passed failed)} } qw(direct proxy)), '';
print "\nskipped files (" . scalar(@skipped_files) . "):\n";
printf "  %-26s %s\n", $_, $file_skip{$_} for @skipped_files;
if (@regressions) {
    print "\nassertions that pass directly and not through memshard (not in the skip table):\n";
    print "  $_\n" for @regressions;
}
# The closing line: of the assertions memcached passes directly, how many
# pass through memshard (passed), how many do not (failed) and how many of
# those are listed skips.
print "\nmemcached-tests: $both_pass passed, $lost_total failed, $skipped_asserts skipped\n";
exit(@regressions ? 1 : 0);

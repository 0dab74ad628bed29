#!/usr/bin/perl
# run_hostile_suite.pl — the hostile-tenant suite generated from the catalog
# (issue 37).  Every function, procedure, aggregate and relation that
# extension tfm installs is read from pg_depend (deptype 'e') with its
# argument types, so an entry point added tomorrow is covered without an
# edit here.  For each input argument of each routine, the driver builds
# calls that hold the other arguments at sane values (setup.sql's objects
# of mallory) and give this one a hostile value from a table keyed by the
# argument's type (NULLs, empty and huge values, names of 63/64/127/128
# bytes, deep nesting, arrays of 1e6 elements, negative and maximal sizes,
# other roles' objects, system catalogs).  Every call runs as mallory, an
# ordinary role, with statement_timeout 1s and tfm.work_mem 64MB, and must:
#   - not crash the server (the connection lives, the postmaster start time
#     is the same);
#   - end with success or a clear SQLSTATE: anything but class XX
#     (internal error, "please report a bug") and 58 (system error);
#   - end within 1.5 s of the timeout;
#   - keep the backend's peak resident memory (VmHWM, reset before each call
#     through /proc/<pid>/clear_refs) within tfm.work_mem + 192 MB + 4 times
#     the largest argument (a 100 MB text is 100 MB before tfm sees it, a
#     copy, a result of its size and that result's copy);
#   - leave the session's settings (every row of pg_settings, current_user,
#     session_user) as they were;
#   - return no marker of another role's secret rows, vocabulary or model
#     outputs (setup.sql), leave other roles' objects and grants unchanged,
#     and not succeed when an object argument names another role's object;
#   - answer a NULL in a required text, int[] or text[] argument with NULL
#     (no rows), or refuse it with 22004 (22023 where documented): NULL in,
#     NULL out (doc/reference.md, NULLs; test/regress/sql/nulls.sql holds
#     which routines refuse); a NULL element of a text[] is no other error.
# Relations are read as mallory: no row of another role's objects in a
# table under row-level security; views only as documented public.  Then
# alice, bob and the superuser read every relation (mallory's traps must not
# fire for them).  Pass 2 (--workers) runs while tfm's background workers
# run the jobs of all three roles, then checks that every job produced its
# outputs, that the job inputs saw the settings of their own owner only, and
# that nobody became a superuser.
#
#   run_hostile_suite.pl --db DB [--workers] [--log FILE] [--big N] [--only REGEX] [--every N]
# --big: 100 MB values per function name (1: the first text or bytea argument
# of one overload); --only: routines and relations whose
# name matches; --every N: every N-th generated call only (pass 2)
# Connects with the PG* environment (a superuser); exits 1 on any violation.
use strict;
use warnings;
use DBI;
use Getopt::Long;
use Time::HiRes qw(time sleep);

my ($db, $workers, $logfile, $only) = ('tfm_hostile_suite', 0, '/dev/null', '');
my $big = 1;		# 100 MB values per function name, all overloads together (0: none)
my $every = 1;		# run every n-th generated call (each routine's sane call always)
my $work_mem_mb = 64;
my $timeout_s = 1.0;
my $cancel_slack = 1.5;
my $mem_const_mb = 192;
GetOptions('db=s' => \$db, 'workers' => \$workers, 'log=s' => \$logfile,
           'big=i' => \$big, 'only=s' => \$only, 'every=i' => \$every) or die "bad options\n";
open(my $log, '>', $logfile) or die "$logfile: $!\n";
$log->autoflush(1);
$| = 1;

# ---- allow-list: documented behaviours only, each with its reason ---------
# relations that show every role's rows by design (doc/operations.md, Roles
# and privileges: "Everyone may read tfm.models and tfm.tokenizers (names,
# configs, owners: like pg_class)"; doc/reference.md: the jobs, aliases and
# deployments catalogs are readable by PUBLIC)
my %public_catalog = map { $_ => 1 } qw(
  tfm.models tfm.tokenizers tfm.model_list tfm.tokenizer_list tfm.deployed tfm.deployments
  tfm.aliases tfm.alias_history tfm.job_defs tfm.jobs tfm.job_workers tfm.orphaned tfm.progress tfm.node);
# (the labels of a model are in its public tfm.models row: the label
# markers are checked in routines' results only)

my $host = $ENV{PGHOST} // '';
my $port = $ENV{PGPORT} // 5432;
my $admin_user = $ENV{PGUSER} // 'postgres';
sub connect_as {
  my ($user) = @_;
  my $dbh = DBI->connect("dbi:Pg:dbname=$db;host=$host;port=$port", $user, '',
                         { AutoCommit => 1, RaiseError => 0, PrintError => 0, PrintWarn => 0 });
  die "cannot connect as $user: $DBI::errstr\n" unless $dbh;
  $dbh->do("SET client_min_messages = error");
  return $dbh;
}
my $admin = connect_as($admin_user);
sub server_alive;
# the superuser's queries; after a crash ended its session, once more on a new one
sub aq {
  my ($sql, @b) = @_;
  my $r = $admin->selectall_arrayref($sql, undef, @b);
  $r = $admin->selectall_arrayref($sql, undef, @b) if !$r && !$admin->ping && !server_alive();
  die "admin: $sql: " . $admin->errstr . "\n" unless $r;
  return $r;
}
sub a1 { my $r = aq(@_); return $r->[0][0]; }
my $started = a1("SELECT pg_postmaster_start_time()");

my @violations;
my %hist;		# SQLSTATE => calls
my ($ncalls, $worst_cancel, $worst_cancel_call, $worst_mem, $worst_mem_call) = (0, 0, '', 0, '');
my $mem_reset_works;
sub violation {
  my ($call, $what) = @_;
  push @violations, "$what: $call";
  print $log "VIOLATION $what: $call\n";
}

# ---- markers ----------------------------------------------------------------
my $others = "alice|bob";
my $secret_re = "SECRET-($others)-|zq($others)secret|7a71(616c696365|626f62)736563726574";
my $label_re = "($others)_label_";

# ---- the catalog --------------------------------------------------------
my $routines = aq(<<'SQL');
SELECT p.oid, n.nspname, p.proname, p.prokind::text, format_type(p.prorettype, NULL), p.proretset,
       p.pronargdefaults, p.pronargs,
       (SELECT array_agg(format_type(t, NULL) ORDER BY o) FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY u(t, o)),
       coalesce(p.proargnames, '{}'), coalesce(p.proargmodes::text[], '{}'),
       p.oid::regprocedure::text
  FROM pg_depend d
  JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
  JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
  JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE e.extname = 'tfm' AND d.deptype = 'e'
 ORDER BY p.oid::regprocedure::text
SQL
my $relations = aq(<<'SQL');
SELECT c.oid::regclass::text, c.relkind::text, c.relrowsecurity,
       (SELECT array_agg(attname::text) FROM pg_attribute WHERE attrelid = c.oid AND attnum > 0 AND NOT attisdropped)
  FROM pg_depend d
  JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
  JOIN pg_class c ON d.classid = 'pg_class'::regclass AND d.objid = c.oid
 WHERE e.extname = 'tfm' AND d.deptype = 'e' AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
 ORDER BY 1
SQL

# ---- values ----------------------------------------------------------------
# [label, SQL expression, bytes of the argument (for the memory bound), big?]
my $MB = 1 << 20;
sub names_of_len {
  return (["name 63 bytes", "repeat('n', 63)", 63], ["name 64 bytes", "repeat('n', 64)", 64],
          ["name 127 bytes", "repeat('n', 127)", 127], ["name 128 bytes", "repeat('n', 128)", 128],
          ["name 128 bytes of 2-byte characters", "repeat('é', 64)", 128],
          ["name with quotes and dots", q{'x"y.z''w; --'}, 14]);
}
my %by_type = (
  'text' => [["NULL", "NULL::text", 0], ["empty", "''", 0],
             ["1 MB", "repeat('ab c ', 209715)", $MB],
             ["100 MB", "repeat(repeat('ab c ', 209715), 100)", 100 * $MB, 1],
             names_of_len(),
             ["deep brackets (100k)", "repeat('[', 100000) || repeat(']', 100000)", 200000],
             ["deep template expression (20k)", "'{{ ' || repeat('-', 20000) || '1 }}'", 20000],
             ["deep template parentheses (20k)", "'{{ ' || repeat('(', 20000) || '1' || repeat(')', 20000) || ' }}'", 40000],
             ["deep template blocks (5k)", "repeat('{% if true %}', 5000) || 'x' || repeat('{% endif %}', 5000)", 120000]],
  'integer' => [["NULL", "NULL::integer", 0], ["-1", "-1", 0], ["0", "0", 0],
                ["max", "2147483647", 0], ["min", "(-2147483647 - 1)", 0]],
  'bigint' => [["NULL", "NULL::bigint", 0], ["-1", "-1::bigint", 0], ["0", "0::bigint", 0],
               ["max", "9223372036854775807", 0], ["min", "(-9223372036854775807 - 1)", 0]],
  'real' => [["NULL", "NULL::real", 0], ["-1", "-1::real", 0], ["0", "0::real", 0],
             ["NaN", "'NaN'::real", 0], ["Infinity", "'Infinity'::real", 0],
             ["-Infinity", "'-Infinity'::real", 0], ["max", "3.4e38::real", 0]],
  'boolean' => [["NULL", "NULL::boolean", 0], ["true", "true", 0], ["false", "false", 0]],
  'integer[]' => [["NULL", "NULL::integer[]", 0], ["empty", "'{}'::integer[]", 0],
                  ["1e6 elements", "array_fill(5, ARRAY[1000000])", 4 * $MB],
                  ["1e6 large ids", "array_fill(2147483647, ARRAY[1000000])", 4 * $MB],
                  ["NULL element", "ARRAY[5, NULL, 6]", 0], ["negative ids", "ARRAY[-1, -2147483647]", 0],
                  ["max id", "ARRAY[2147483647]", 0], ["2-D", "'{{5,6},{7,8}}'::integer[]", 0],
                  ["lower bound 7", "'[7:9]={5,6,7}'::integer[]", 0]],
  'bigint[]' => [["NULL", "NULL::bigint[]", 0], ["empty", "'{}'::bigint[]", 0],
                 ["1e6 elements", "array_fill(5::bigint, ARRAY[1000000])", 8 * $MB],
                 ["NULL element", "ARRAY[5, NULL]::bigint[]", 0],
                 ["negative", "array_fill(-9223372036854775807::bigint, ARRAY[12])", 0],
                 ["max", "array_fill(9223372036854775807::bigint, ARRAY[12])", 0],
                 ["2-D", "'{{5,6},{7,8}}'::bigint[]", 0]],
  'real[]' => [["NULL", "NULL::real[]", 0], ["empty", "'{}'::real[]", 0],
               ["1e6 elements", "array_fill(0.5::real, ARRAY[1000000])", 4 * $MB],
               ["NULL element", "ARRAY[1, NULL]::real[]", 0],
               ["NaN and Infinity", "ARRAY['NaN', 'Infinity', '-Infinity']::real[]", 0],
               ["2-D", "'{{1,2},{3,4}}'::real[]", 0]],
  'text[]' => [["NULL", "NULL::text[]", 0], ["empty", "'{}'::text[]", 0],
               ["1e6 elements", "array_fill('ab c'::text, ARRAY[1000000])", 8 * $MB],
               ["NULL element", "ARRAY['a', NULL]", 0], ["2-D", "'{{a,b},{c,d}}'::text[]", 0],
               ["a 1 MB element", "ARRAY[repeat('ab c ', 209715)]", $MB],
               ["128-byte elements", "ARRAY[repeat('n', 128), repeat('n', 128)]", 0],
               ["deep template element", "ARRAY['{{ ' || repeat('-', 20000) || '1 }}']", 20000]],
  'jsonb' => [["NULL", "NULL::jsonb", 0], ["empty object", "'{}'::jsonb", 0], ["empty array", "'[]'::jsonb", 0],
              ["json null", "'null'::jsonb", 0], ["a string", "'\"x\"'::jsonb", 0],
              ["deep nesting (10k)", "(repeat('[', 10000) || repeat(']', 10000))::jsonb", 20000],
              ["deep objects (5k)", "(repeat('{\"a\": ', 5000) || '1' || repeat('}', 5000))::jsonb", 40000],
              ["1e6-element array", "(SELECT jsonb_agg(i) FROM generate_series(1, 1000000) i)", 16 * $MB],
              ["huge numbers", "'{\"batch\": 1e308, \"max_tokens\": -1e308, \"vocab_size\": 99999999999}'::jsonb", 0],
              ["messages of wrong types", "'[{\"role\": 1, \"content\": {\"a\": []}}, null, 5]'::jsonb", 0],
              ["1 MB string", "jsonb_build_object('content', repeat('ab c ', 209715))", $MB]],
  'bytea' => [["NULL", "NULL::bytea", 0], ["empty", "'\\x'::bytea", 0],
              ["1 MB zeros", "decode(repeat('00', 1048576), 'hex')", $MB],
              ["100 MB", "convert_to(repeat(repeat('ab c ', 209715), 100), 'UTF8')", 100 * $MB, 1],
              ["GGUF header with huge counts", "decode('4747554603000000ffffffffffffff7fffffffffffffff7f', 'hex')", 0],
              ["garbage", "decode(repeat('ff7f0080', 64), 'hex')", 0]],
  'regclass' => [["NULL", "NULL::regclass", 0], ["another role's table", "'alice.secret'::regclass", 0],
                 ["another role's view", "'alice.secret_view'::regclass", 0],
                 ["another role's job destination", "'alice.alice_job'::regclass", 0],
                 ["a system catalog", "'pg_authid'::regclass", 0], ["tfm's tensors", "'tfm.tensors'::regclass", 0],
                 ["a sequence", "'tfm.version_seq'::regclass", 0],
                 ["OID 0", "0::oid::regclass", 0], ["no such OID", "4294967295::oid::regclass", 0]],
  'regrole' => [["NULL", "NULL::regrole", 0], ["another role", "'alice'::regrole", 0],
                ["a superuser", "'postgres'::regrole", 0], ["OID 0", "0::oid::regrole", 0]],
  'regrole[]' => [["NULL", "NULL::regrole[]", 0], ["empty", "'{}'::regrole[]", 0],
                  ["others and a superuser", "ARRAY['alice', 'postgres']::regrole[]", 0],
                  ["NULL element", "ARRAY[NULL]::regrole[]", 0]],
  'oid' => [["NULL", "NULL::oid", 0], ["0", "0::oid", 0], ["max", "4294967295::oid", 0],
            ["another role", "'alice'::regrole::oid", 0], ["the bootstrap superuser", "10::oid", 0]],
  'interval' => [["NULL", "NULL::interval", 0], ["negative", "'-1 s'::interval", 0], ["0", "'0'::interval", 0],
                 ["max", "'178000000 years'::interval", 0], ["1 microsecond", "'1 microsecond'::interval", 0]],
  'internal' => [["NULL", "NULL::internal", 0]],
);
# json (kept as written: key order and duplicates) takes jsonb's hostile values
# as json, and text that is no JSON at all
$by_type{'json'} = [(map { my ($w, $v, $b) = @$_; (my $j = $v) =~ s/::jsonb\b/::json/g;
                           $j = "($j)::json" unless $j =~ /::json\b/; [$w, $j, $b] } @{ $by_type{'jsonb'} }),
                    ["duplicate keys", "'{\"messages\": [], \"messages\": 5}'::json", 0],
                    ["deep arrays in messages (10k)", "('{\"messages\": ' || repeat('[', 10000) || repeat(']', 10000) || '}')::json", 20000]];
# other roles' objects, for arguments that name an object or a role
# (the fifth field: the namespace the name lives in)
my @foreign_objects = (["alice's model", "'alice_cls'", 0, 0, 'model'], ["alice's lm", "'alice_lm'", 0, 0, 'model'],
                       ["alice's seq2seq", "'alice_s2s'", 0, 0, 'model'], ["alice's tokenizer", "'alice_tok'", 0, 0, 'tokenizer'],
                       ["alice's alias", "'alice_alias'", 0, 0, 'alias'], ["alice's job", "'alice_job'", 0, 0, 'job']);
my @foreign_roles = (["another role", "'alice'", 0], ["a superuser", "'postgres'", 0],
                     ["PUBLIC", "'public'", 0], ["pg_read_server_files", "'pg_read_server_files'", 0]);
my @foreign_queries = (["another role's secret table", "'SELECT body, body FROM alice.secret'", 0],
                       ["another role's view", "'SELECT body, body FROM alice.secret_view'", 0],
                       ["two statements", "'SELECT 1, 2; SELECT body, body FROM alice.secret'", 0],
                       ["a query that writes", "'INSERT INTO mallory.secret VALUES (999, ''x'') RETURNING body, body'", 0]);
my @foreign_expressions = (["another role's secret rows", "'(SELECT string_agg(body, '''') FROM alice.secret)'", 0],
                           ["injected statement", "'body) FROM mallory.docs; SELECT (1'", 0]);
my @foreign_paths = (["/etc/passwd", "'/etc/passwd'", 0], ["the data directory", "'.'", 0],
                     ["/proc/self/mem", "'/proc/self/mem'", 0]);
# arguments that name an object, and the namespaces of the names they take
# (models, tokenizers, aliases and jobs have a namespace each; a model
# argument takes an alias too): a call that succeeds with another role's
# object there is a violation
my %object_arg = map { $_ => 1 } qw(model tokenizer source object alias name new_name target);
sub namespaces_of {
  my ($f, $arg, $type) = @_;
  return () unless $type eq 'text';
  return qw(model alias) if $arg eq 'model';
  return qw(tokenizer) if $arg eq 'tokenizer';
  return qw(model tokenizer alias) if $arg eq 'object';
  return qw(alias) if $arg eq 'alias';
  return qw(model) if $arg =~ /^(source|target)$/ && $f eq 'tfm_copy_model';
  return qw(model) if $arg eq 'new_name';
  if ($arg eq 'name') {
    return qw(job) if $f =~ /^tfm_job_/;
    return qw(tokenizer) if $f =~ /^tfm_tokenizer_/;
    return qw(model) if $f =~ /model|import/;
  }
  return ();
}

# ---- sane arguments -------------------------------------------------------
my $fresh = 0;
sub fresh_name { $fresh++; return "'mallory_new_$fresh'"; }
sub model_for {
  my ($f) = @_;
  return "'mallory_json'" if $f =~ /extract/;
  return "'mallory_lm'" if $f =~ /generate|next_tokens|score|chat|gguf/;
  return "'mallory_s2s'" if $f =~ /translate/;
  return "'mallory_xenc'" if $f =~ /rerank/;
  return "'mallory_nli'" if $f =~ /zero_shot/;
  return "'mallory_ner'" if $f =~ /entities/;
  return "'mallory_qa'" if $f =~ /answer/;
  return "'mallory_cls'";
}
sub sane {
  my ($f, $arg, $type) = @_;
  $arg //= '';
  return model_for($f) if $arg eq 'model';
  if ($arg eq 'name') {
    return "'mallory_scratch'" if $f =~ /^tfm_(drop_model|rename_model)$/;
    return "'mallory_scratch_tok'" if $f eq 'tfm_tokenizer_drop';
    return "'mallory_job'" if $f =~ /^tfm_job_(pause|resume|run)$/;
    return "'mallory_scratch_job'" if $f eq 'tfm_job_drop';
    return fresh_name();
  }
  my %s = (
    tokenizer => $f =~ /import_gguf/ ? 'true' : "'mallory_tok'",
    new_name => fresh_name(), target => fresh_name(), source => $type eq 'regclass' ? "'mallory.docs'::regclass" : "'mallory_cls'",
    alias => $f eq 'tfm_undeploy' ? "'mallory_scratch_alias'" : "'mallory_alias'",
    object => "'mallory_cls'", grantee => "'bob'", privilege => "'use'", role => "'mallory_sub'",
    old_role => "'mallory_sub'", new_role => "'mallory'",
    query => "'SELECT body, label FROM mallory.docs'", input => $f eq 'tfm_job_create' ? "'body'" : "'the sea and the whale'",
    inputs => "ARRAY['the sea', 'the whale']", prompts => "ARRAY['the sea', 'the whale']",
    sources => "ARRAY['the sea', 'the whale']", ids => "ARRAY[5, 6, 7]",
    task => $f eq 'tfm_job_create' ? "'classify'" : ($f eq 'tfm_create_model' ? "'classify'" : 'NULL'),
    messages => q{'[{"role": "user", "content": "the sea"}]'::jsonb},
    schema => q{'{"type": "object", "properties": {"a": {"enum": ["x", "y"]}, "b": {"type": "string", "maxLength": 3}}, "required": ["a"]}'::jsonb},
    json_schema => 'NULL::jsonb',
    template => q{'{% for m in messages %}{{ m.role }}: {{ m.content }}{% endfor %}'},
    tokenizer_config => q{'{"chat_template": "{{ messages[0].content }}"}'::jsonb},
    config => $f eq 'tfm_import_marian' ? q{'{"model_type": "marian", "vocab_size": 300, "d_model": 16, "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 32, "decoder_ffn_dim": 32, "max_position_embeddings": 32, "pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": 0}'::jsonb} : q{'{"model_type": "gpt2", "vocab_size": 300, "n_positions": 32, "n_embd": 16, "n_layer": 1, "n_head": 2}'::jsonb},
    weights => "'\\x0001'::bytea", gguf => "'\\x47475546'::bytea", vocab => $type eq 'jsonb' ? q{'{"a": 0}'::jsonb} : "'a b c'",
    merges => "''", kind => "'word'", directory => "'/nonexistent'", path => "'/nonexistent'",
    chunk_tokens => '8', tensor => "'enc.0.ln1.g'", setting => "'fp32'", hypothesis => "'the cat sat'",
    reference => "'the cat sat'", references => "ARRAY['the cat sat']", a => "ARRAY[1, 2]::real[]",
    b => "ARRAY[2, 1]::real[]", batch => '1', length => '8', node => '1', seq => "'tfm.version_seq'::regclass",
    label => "'mallory_label'", question => "'what is the sea'",
    context => $type eq 'json' ? q{'{"messages": [{"role": "user", "content": "the sea"}]}'::json} : "'the sea and the whale'",
    aggregation => "'simple'",
  );
  return $s{$arg} if exists $s{$arg} && !($arg eq 'source' && $type eq 'text' && $f ne 'tfm_copy_model' && $f !~ /translate|attention/)
                     && !($arg eq 'tokenizer' && $type eq 'jsonb');
  return "'the sea'" if $arg eq 'source';
  return q{'{"model": {"type": "WordLevel", "vocab": {"a": 0}}}'::jsonb} if $arg eq 'tokenizer';
  my %t = ('text' => "'x'", 'integer' => '1', 'bigint' => '1', 'real' => '0.5', 'boolean' => 'true',
           'integer[]' => 'ARRAY[5, 6]', 'bigint[]' => 'NULL::bigint[]', 'real[]' => 'ARRAY[1, 2]::real[]',
           'text[]' => "ARRAY['x']", 'jsonb' => "'{}'::jsonb", 'json' => "'{}'::json", 'bytea' => "'\\x00'::bytea",
           'regclass' => "'mallory.docs'::regclass", 'regrole' => "'mallory'::regrole",
           'regrole[]' => "ARRAY['mallory']::regrole[]", 'oid' => "'mallory'::regrole::oid",
           'interval' => "'1 s'::interval", 'internal' => 'NULL::internal');
  return $t{$type} // "NULL::$type";
}
# arguments with defaults that the sane call passes anyway (a small model,
# a short run), so that a hostile value of another argument reaches its check
my %base = (
  tfm_create_model => { tokenizer => "'mallory_tok'", labels => "ARRAY['a', 'b']", d_model => '16', heads => '2',
                        layers => '1', max_len => '32' },
  tfm_train => { epochs => '1', batch_size => '4', val_fraction => '0' },
  tfm_fit => { epochs => '1', batch_size => '4', val_fraction => '0' },
  tfm_generate => { max_tokens => '4' }, tfm_generate_tokens => { max_tokens => '4' }, tfm_chat => { max_tokens => '4' },
  tfm_extract => { max_tokens => '32' },
  tfm_translate => { max_tokens => '4' }, tfm_translate_nbest => { max_tokens => '4' },
);

sub values_for {
  my ($f, $arg, $type) = @_;
  my @v = @{ $by_type{$type} // [["NULL", "NULL::$type", 0]] };
  $arg //= '';
  if ($type eq 'text') {
    push @v, @foreign_objects if $object_arg{$arg};
    push @v, @foreign_roles if $arg =~ /role$|^grantee$/;
    push @v, @foreign_queries if $arg eq 'query';
    push @v, @foreign_expressions if $arg eq 'input' && $f eq 'tfm_job_create';
    push @v, @foreign_paths if $arg =~ /^(directory|path)$/;
  }
  return @v;
}

# ---- checks around one call ------------------------------------------------
my $settings_sql = "SELECT string_agg(name || '=' || setting, E'\\n' ORDER BY name) || E'\\nuser=' || current_user"
                 . " || E'\\nsession_user=' || session_user FROM pg_settings";
# everything of alice and bob that mallory must not change: their models,
# tokenizers, aliases, jobs, grants and rows
my $others_sql = <<'SQL';
SELECT md5(concat_ws('|',
  (SELECT string_agg(concat_ws(',', name, owner, version, steps, updated_at), ';' ORDER BY name) FROM tfm.model_list WHERE owner::text <> 'mallory'),
  (SELECT string_agg(concat_ws(',', name, owner, use_granted), ';' ORDER BY name) FROM tfm.tokenizer_list WHERE owner::text <> 'mallory'),
  (SELECT string_agg(concat_ws(',', a.name, a.model_id, a.owner), ';' ORDER BY a.name) FROM tfm.aliases a WHERE owner::text <> 'mallory'),
  (SELECT string_agg(concat_ws(',', name, owner, state, destination, input, model), ';' ORDER BY name) FROM tfm.job_defs WHERE owner::text <> 'mallory'),
  (SELECT string_agg(body, ';' ORDER BY id) FROM alice.secret), (SELECT string_agg(body, ';' ORDER BY id) FROM bob.secret),
  (SELECT count(*) FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.owner::text <> 'mallory'),
  (SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles WHERE rolsuper)))
SQL
# weights of mallory's models that equal another role's (a copy she may not make)
my $copied_sql = <<'SQL';
SELECT string_agg(DISTINCT m.name, ', ') FROM tfm.models m JOIN tfm.tensors t ON t.model_id = m.id
  JOIN tfm.tensors o ON o.name = t.name AND o.data = t.data AND o.model_id <> t.model_id
  JOIN tfm.models om ON om.id = o.model_id
 WHERE m.owner::text = 'mallory' AND om.owner::text <> 'mallory' AND t.name LIKE '%emb%'
SQL

my ($mdbh, $mpid, $settings0, $settings0_md5, $others0);
sub mallory_session {
  $mdbh->disconnect if $mdbh;
  for (1 .. 200) {		# (after a crash: until recovery ends)
    $mdbh = eval { connect_as('mallory') };
    last if $mdbh;
    sleep 0.2;
  }
  die "cannot connect as mallory\n" unless $mdbh;
  $mdbh->do("SET statement_timeout = '1s'");
  $mdbh->do("SET tfm.work_mem = '${work_mem_mb}MB'");
  $mdbh->do("SET tfm.threads = 1");
  $mpid = $mdbh->selectrow_array("SELECT pg_backend_pid()");
  ($settings0, $settings0_md5) = $mdbh->selectrow_array("SELECT s, md5(s) FROM ($settings_sql) x(s)");
}
sub reset_peak {
  my ($pid) = @_;
  open(my $fh, '>', "/proc/$pid/clear_refs") or return 0;
  print $fh "5";
  close($fh) or return 0;
  return 1;
}
sub peak_mb {
  my ($pid) = @_;
  if (open(my $fh, '<', "/proc/$pid/status")) {
    local $/;
    my $s = <$fh>;
    return $1 / 1024 if $s =~ /VmHWM:\s+(\d+)/;
  }
  # not the server's OS user: read it through the superuser's session
  my $s = $admin->selectrow_array("SELECT pg_read_file('/proc/$pid/status')");
  return defined $s && $s =~ /VmHWM:\s+(\d+)/ ? $1 / 1024 : -1;
}
# a crash ends every backend (the postmaster itself lives on and keeps its
# start time): the superuser's session dies too
sub server_alive {
  return 1 if $admin->ping;
  for (1 .. 200) {
    my $d = eval { connect_as($admin_user) };
    if ($d) { $admin = $d; last; }
    sleep 0.2;
  }
  return 0;
}
sub run_call {
  my ($desc, $sql, $arg_bytes, %o) = @_;
  $ncalls++;
  my $reset = reset_peak($mpid);
  $mem_reset_works //= $reset;
  my $t0 = time;
  my $sth = $mdbh->prepare($sql);
  my $ok = $sth && $sth->execute;
  my $row = $ok ? $sth->fetchrow_arrayref : undef;
  my $secs = time - $t0;
  my $state = $ok ? '00000' : ($mdbh->state || '?????');
  my $err = $ok ? '' : ($mdbh->errstr // '');
  $err =~ s/\s+/ /g;
  $sth->finish if $sth;
  my $alive = $mdbh->ping;
  if (!$alive) {
    $state = 'lost';
    sleep 0.5;		# (a crash: the postmaster ends every backend, the superuser's too)
    violation($desc, server_alive() ? "connection lost (backend died)" : "the server crashed (every session ended)");
    mallory_session();
  }
  my $mb = $alive ? peak_mb($mpid) : -1;
  $hist{$state}++;
  my $limit_mb = $work_mem_mb + $mem_const_mb + 4 * $arg_bytes / $MB;
  printf $log "%s\t%s\t%.3f s\t%.0f MB\t%s\n", $state, $desc, $secs, $mb, substr($err, 0, 200);
  if ($state ne 'lost') {
    violation($desc, "SQLSTATE $state is not a clear error ($err)") if $state =~ /^(XX|58)/ || $state eq '?????';
    if ($secs > $timeout_s + $cancel_slack) {
      violation($desc, sprintf("took %.2f s (timeout %.1f s + %.1f s)", $secs, $timeout_s, $cancel_slack));
    }
    ($worst_cancel, $worst_cancel_call) = ($secs, $desc) if $state eq '57014' && $secs > $worst_cancel;
    ($worst_mem, $worst_mem_call) = ($mb, $desc) if $mb > $worst_mem;
    violation($desc, sprintf("peak %.0f MB > %.0f MB (tfm.work_mem %d MB + %d MB + 4 x argument)", $mb, $limit_mb, $work_mem_mb, $mem_const_mb))
      if $mb > $limit_mb;
    my $md5 = $mdbh->selectrow_array("SELECT md5(s) FROM ($settings_sql) x(s)") // '';
    my $settings1 = $md5 eq $settings0_md5 ? $settings0 : ($mdbh->selectrow_array($settings_sql) // '');
    if ($settings1 ne $settings0) {
      my %a = map { split(/=/, $_, 2) } split(/\n/, $settings0);
      my %b = map { split(/=/, $_, 2) } split(/\n/, $settings1);
      # (a setting that appears, such as plpgsql's when a call loads it, is no change)
      my @d = map { "$_: $a{$_} -> $b{$_}" } grep { exists $b{$_} && $a{$_} ne $b{$_} } sort keys %a;
      push @d, map { "$_ gone" } grep { !exists $b{$_} } sort keys %a;
      violation($desc, "session settings changed (" . join('; ', @d) . ")") if @d;
      ($settings0, $settings0_md5) = ($settings1, $md5);
      mallory_session() if @d;
    }
  }
  if ($ok && $row && $o{leak_check}) {
    my ($n, $secret, $labels) = @$row;
    violation($desc, "returned another role's secret rows or vocabulary") if $secret;
    violation($desc, "returned another role's model outputs (labels)") if $labels;
  }
  # NULL in, NULL out (or a refusal: 22004, 22023 where documented)
  my $refused = $state =~ /^(22004|22023)$/;
  if ($o{null_input} && $state ne 'lost') {
    violation($desc, "a NULL $o{arg} answered a value, not NULL (doc/reference.md, NULLs)")
      if $ok && $row && $row->[3];
    violation($desc, "a NULL $o{arg} ended with SQLSTATE $state, neither a NULL answer nor a refusal (22004)")
      if !$ok && !$refused;
  }
  violation($desc, "a NULL element of $o{arg} ended with SQLSTATE $state (a NULL element answers NULL, or is refused with 22004)")
    if $o{null_element} && $state ne 'lost' && !$ok && !$refused;
  if ($ok && $o{foreign}) {
    violation($desc, "succeeded with $o{foreign} as its $o{arg}");
  }
  my $others1 = a1($others_sql);
  violation($desc, "changed another role's objects, grants or rows, or made a superuser") if $others1 ne $others0;
  $others0 = $others1;
  if ($ok) {
    my $c = a1($copied_sql);
    violation($desc, "mallory now holds weights of another role's model ($c)") if $c;
  }
  return $state;
}

# put back what a call may have changed of mallory's own sane objects
sub restore {
  $admin->do(<<'SQL') or die "restore: " . $admin->errstr . "\n";
SET ROLE mallory;
SET tfm.threads = 1;
DO $$
BEGIN
  PERFORM tfm_drop_model(name) FROM tfm.models
    WHERE owner::text = 'mallory' AND name NOT IN ('mallory_cls', 'mallory_lm', 'mallory_s2s', 'mallory_scratch',
                                                   'mallory_xenc', 'mallory_nli', 'mallory_json', 'mallory_ner',
                                                   'mallory_qa');
  PERFORM tfm_undeploy(name) FROM tfm.aliases
    WHERE owner::text = 'mallory' AND name NOT IN ('mallory_alias', 'mallory_scratch_alias');
  PERFORM tfm_job_drop(name, true) FROM tfm.job_defs
    WHERE owner::text = 'mallory' AND name NOT IN ('mallory_job', 'mallory_scratch_job', 'mallory_hidden_job');
  PERFORM tfm_tokenizer_drop(name) FROM tfm.tokenizers t
    WHERE owner::text = 'mallory' AND name NOT IN ('mallory_tok', 'mallory_scratch_tok', 'mallory_chars')
      AND NOT EXISTS (SELECT FROM tfm.models m WHERE m.tokenizer = t.name OR m.target_tokenizer = t.name);
  IF NOT EXISTS (SELECT FROM tfm.models WHERE name = 'mallory_scratch') THEN
    PERFORM tfm_create_model('mallory_scratch', 'classify', 'mallory_tok', labels => ARRAY['a', 'b'],
                             d_model => 16, heads => 2, layers => 1, max_len => 32);
  END IF;
  IF NOT EXISTS (SELECT FROM tfm.tokenizers WHERE name = 'mallory_scratch_tok') THEN
    PERFORM tfm_tokenizer_train('mallory_scratch_tok', 'a b c', 'word');
  END IF;
  IF NOT EXISTS (SELECT FROM tfm.aliases WHERE name = 'mallory_scratch_alias') THEN
    PERFORM tfm_deploy('mallory_cls', 'mallory_scratch_alias');
  END IF;
  IF NOT EXISTS (SELECT FROM tfm.aliases WHERE name = 'mallory_alias') THEN
    PERFORM tfm_deploy('mallory_cls', 'mallory_alias');
  END IF;
  IF NOT EXISTS (SELECT FROM tfm.job_defs WHERE name = 'mallory_scratch_job') THEN
    DROP TABLE IF EXISTS mallory.mallory_scratch_job;
    PERFORM tfm_job_create('mallory_scratch_job', 'mallory.docs', 'body', 'mallory_cls', 'embed');
  END IF;
  DELETE FROM mallory.secret WHERE id = 999;
END $$;
RESET ROLE;
SQL
  # (pass 1: mallory's own job stays paused; pass 2 keeps it running)
  $admin->do($workers ? "SELECT tfm_job_resume('mallory_job') FROM tfm.job_defs WHERE name = 'mallory_job' AND state = 'paused'"
                      : "SELECT tfm_job_pause('mallory_job') FROM tfm.job_defs WHERE name = 'mallory_job' AND state = 'active'");
}

# ---- pass 2's background: workers running the three roles' jobs ------------
my $feed = 0;
sub feed_jobs {
  return unless $workers;
  $feed++;
  for my $r (qw(mallory alice bob)) {	# (mallory's first: a worker then goes on to the others')
    $admin->do("INSERT INTO $r.docs VALUES (1000 + $feed, 'the sea and the whale fed $feed', 'a')");
  }
}
if ($workers) {
  $admin->do("SELECT tfm_job_resume(name) FROM tfm.job_defs WHERE name IN ('alice_job', 'bob_job', 'mallory_job')");
}

# ---- the routines ------------------------------------------------------------
$others0 = a1($others_sql);
mallory_session();
my ($n_entry, $n_rel) = (0, 0);
my %big_done;		# function name => 100 MB values given (overloads share the budget)
my $t_start = time;
for my $r (@$routines) {
  my ($oid, $nsp, $f, $kind, $rettype, $retset, $ndef, $nargs, $types, $names, $modes, $sig) = @$r;
  next if $only && $sig !~ /$only/;
  $n_entry++;
  $types //= [];
  # input arguments' names (proargnames covers OUT ones too)
  my @in_names;
  if (@$modes) {
    for my $i (0 .. $#$modes) { push @in_names, $names->[$i] if $modes->[$i] =~ /^[ibv]$/; }
  } else {
    @in_names = @$names;
  }
  my $qf = ($nsp eq 'public' ? '' : "$nsp.") . $f;
  my $nreq = $nargs - $ndef;
  my $wrap = sub {
    my (@a) = @_;		# [name, expr] per argument to pass
    my (@pos, @named);
    for my $i (0 .. $#a) {
      next unless defined $a[$i];
      if ($i < $nreq) { push @pos, $a[$i][1]; }
      else { push @named, "$a[$i][0] => $a[$i][1]"; }
    }
    my $args = join(', ', @pos, @named);
    # (the fourth: rows that answer something, a row of a record not all NULL)
    my $chk = "count(*), count(*) FILTER (WHERE r::text ~ '$secret_re'), count(*) FILTER (WHERE r::text ~ '$label_re'), "
            . "count(*) FILTER (WHERE NOT (r IS NULL))";
    return "CALL $qf($args)" if $kind eq 'p';
    return "SELECT 1, 0, 0, 0 FROM (SELECT $qf($args) IS NULL) s" if $rettype eq 'internal';
    return "SELECT $chk FROM (SELECT $qf($args) AS r FROM (VALUES (1)) v) s" if $kind eq 'a';
    return "SELECT $chk FROM $qf($args) r";
  };
  my @sane;
  for my $i (0 .. $nargs - 1) {
    my $n = $in_names[$i];
    if ($i < $nreq) { $sane[$i] = [$n, sane($f, $n, $types->[$i])]; }
    elsif (defined $n && $base{$f} && exists $base{$f}{$n}) { $sane[$i] = [$n, $base{$f}{$n}]; }
  }
  my $bigs = $big_done{$f} // 0;
  my @calls = ([ "$sig: every argument sane", [@sane], 0, {} ]);
  # an argument of type internal cannot be given from SQL (PostgreSQL's
  # parser refuses every value): one call shows it, the aggregate that uses
  # the function runs it
  my $internal = grep { $_ eq 'internal' } @$types;
  for my $i (0 .. ($internal ? -1 : $nargs - 1)) {
    my $n = $in_names[$i];
    next if $i >= $nreq && !defined $n;	# an unnamed argument with a default: never passed
    for my $v (values_for($f, $n, $types->[$i])) {
      my ($label, $expr, $bytes, $isbig) = @$v;
      next if $isbig && $bigs >= $big;
      $big_done{$f} = ++$bigs if $isbig;
      my @a = @sane;
      # fresh names for every call (a name argument that creates an object)
      for my $j (0 .. $#a) { $a[$j] = [$a[$j][0], fresh_name()] if defined $a[$j] && $a[$j][1] =~ /^'mallory_new_/; }
      $a[$i] = [$n // "\$" . ($i + 1), $expr];
      my %o;
      # a call that succeeds with another role's object (or another role, for
      # the arguments naming the role whose objects are changed) is a violation
      $o{foreign} = $label if $n && $v->[4] && grep { $_ eq $v->[4] } namespaces_of($f, $n, $types->[$i]);
      $o{foreign} = $label if $n && $n =~ /^(role|old_role)$/ && $label =~ /^(another role|a superuser|PUBLIC|pg_read)/;
      $o{arg} = $n // "argument " . ($i + 1);
      # the NULL rule: a required text, int[] or text[] input
      my $input = $i < $nreq && $types->[$i] =~ /^(text|integer\[\]|text\[\])$/;
      $o{null_input} = 1 if $input && $label eq 'NULL';
      $o{null_element} = 1 if $input && $label eq 'NULL element' && $types->[$i] eq 'text[]';
      push @calls, [ sprintf("%s: %s = %s", $sig, $o{arg}, $label), \@a, $bytes, \%o ];
    }
  }
  my $k = 0;
  # a backend of its own per routine (and after a 100 MB argument): glibc
  # keeps freed memory, so a backend's resident size after a big call is
  # no baseline for the next one's peak
  mallory_session();
  for my $c (@calls) {
    my ($desc, $a, $bytes, $o) = @$c;
    next if $k++ % $every;
    mallory_session() if $k > 1 && $calls[$k - 2][2] >= 100 * $MB;
    run_call($desc, $wrap->(@$a), $bytes, leak_check => ($kind ne 'p' && $rettype ne 'internal'), %$o);
    feed_jobs() if $ncalls % 25 == 0;
  }
  restore();
}

# ---- the relations: as mallory, then as the others ---------------------------
for my $rel (@$relations) {
  my ($name, $kind, $rls, $cols) = @$rel;
  next if $only && $name !~ /$only/;
  $n_rel++;
  my %has = map { $_ => 1 } @$cols;
  my @owned;
  push @owned, "(SELECT owner::text FROM tfm.models WHERE id = r.model_id)" if $has{model_id};
  push @owned, "(SELECT owner::text FROM tfm.tokenizers WHERE id = r.tokenizer_id)" if $has{tokenizer_id};
  push @owned, "(SELECT owner::text FROM tfm.job_defs WHERE id = r.job_id)" if $has{job_id};
  push @owned, "r.owner::text" if $has{owner};
  my $foreign = @owned ? "count(*) FILTER (WHERE coalesce(" . join(', ', @owned) . ") <> 'mallory' OR r::text ~ '($others)')"
                       : "count(*) FILTER (WHERE r::text ~ '($others)')";
  my $st = run_call("SELECT * FROM $name",
    "SELECT count(*), count(*) FILTER (WHERE r::text ~ '$secret_re'), $foreign FROM $name r", 0);
  if ($st eq '00000') {
    my ($n, $secret, $foreign_rows) = $mdbh->selectrow_array(
      "SELECT count(*), count(*) FILTER (WHERE r::text ~ '$secret_re'), $foreign FROM $name r");
    violation("SELECT * FROM $name", "another role's secret rows or vocabulary readable") if $secret;
    violation("SELECT * FROM $name", "rows of another role's objects readable ($foreign_rows of $n)")
      if $foreign_rows && !$public_catalog{$name};
  }
}
# the others and the superuser read every relation: mallory's code must not run as them
# (a relation they hold SELECT on must answer them, whatever mallory did)
for my $who ('alice', 'bob', $admin_user) {
  my $d = connect_as($who);
  for my $rel (@$relations) {
    next if $only && $rel->[0] !~ /$only/;
    next unless $d->selectrow_array("SELECT has_table_privilege('$rel->[0]', 'SELECT')");
    $d->do("SELECT count(*) FROM $rel->[0] r WHERE r::text IS NOT NULL")
      or violation("$who: SELECT * FROM $rel->[0]", "an error after mallory's run (" . $d->state . " "
                   . substr($d->errstr =~ s/\s+/ /gr, 0, 160) . ")");
  }
  $d->disconnect;
}
my $trapped = a1("SELECT string_agg(DISTINCT who || CASE WHEN sup THEN ' (superuser)' ELSE '' END, ', ') FROM mallory.trap_log");
violation("another role reading tfm's relations, or running a job", "ran mallory's code as $trapped") if $trapped;

# ---- pass 2: the jobs ran, each with its own owner's settings ----------------
if ($workers) {
  feed_jobs();
  my $done;
  for (1 .. 300) {
    $done = a1("SELECT bool_and(rows_pending = 0) FROM tfm.jobs WHERE name IN ('alice_job', 'bob_job')");
    last if $done;
    sleep 0.1;
  }
  violation("background workers", "alice's and bob's jobs did not finish within 30 s") unless $done;
  for my $r (qw(alice bob)) {
    my ($src, $dst) = @{ aq("SELECT (SELECT count(*) FROM $r.docs), (SELECT count(DISTINCT id) FROM $r.${r}_job)")->[0] };
    violation("background workers", "${r}_job has $dst outputs for $src rows") if $src != $dst;
    my $bad = a1(<<SQL);
SELECT string_agg(DISTINCT concat_ws(' ', who, search_path, work_mem, statement_timeout, precision), '; ')
  FROM public.job_notes WHERE job = '${r}_job'
   AND (who <> '$r' OR work_mem = '3MB' OR statement_timeout = '7s' OR precision = 'int8' OR search_path LIKE '%mallory%')
SQL
    violation("background workers", "${r}_job ran with another owner's settings or role: $bad") if $bad;
  }
  my $nw = a1("SELECT count(DISTINCT who) FROM public.job_notes WHERE who IN ('alice', 'bob', 'mallory')");
  print "   pass 2: jobs of $nw owners ran in the background workers\n";
  $admin->do("SELECT tfm_job_pause(name) FROM tfm.job_defs WHERE state = 'active'");
}
my $supers = a1("SELECT string_agg(rolname, ', ') FROM pg_roles WHERE rolsuper AND rolname <> '$admin_user'");
violation("the whole run", "$supers became superuser") if $supers;
violation("the whole run", "the server restarted") unless a1("SELECT pg_postmaster_start_time()") eq $started;

# ---- summary -----------------------------------------------------------------
my $secs = time - $t_start;
printf "   %d routines and %d relations of extension tfm, %d calls as mallory in %.0f s%s\n",
  $n_entry, $n_rel, $ncalls, $secs, $workers ? " (background workers running jobs of alice, bob and mallory)" : '';
print "   SQLSTATEs: " . join(', ', map { "$_ x$hist{$_}" } sort { $hist{$b} <=> $hist{$a} || $a cmp $b } keys %hist) . "\n";
printf "   worst cancel: %.2f s after the call began (timeout %.1f s): %s\n", $worst_cancel, $timeout_s, $worst_cancel_call;
printf "   worst peak memory: %.0f MB (tfm.work_mem %d MB; peak %s between calls): %s\n", $worst_mem, $work_mem_mb,
  $mem_reset_works ? 'reset' : 'NOT reset (no access to /proc/<pid>/clear_refs: the peak is the session\'s)', $worst_mem_call;
if (@violations) {
  print "   VIOLATIONS (" . scalar(@violations) . "):\n";
  print "     $_\n" for @violations;
  exit 1;
}
print "   no violation\n";
exit 0;

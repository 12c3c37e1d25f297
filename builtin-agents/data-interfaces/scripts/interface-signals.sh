#!/usr/bin/env bash
# interface-signals: where interfaces and data access live under SRC. For each category (http routes,
# outbound http, rpc, messaging, scheduling, cli, data access, file io) the number of matching lines
# and the top files. Signals for reading, not findings: confirm with grep on the file. Test files are
# left out. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'; optional TOP (default 10).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; TOP="${TOP:-10}"
export R_HTTP='@(Get|Post|Put|Delete|Patch|Request)Mapping|@(GET|POST|PUT|DELETE|PATCH|Path)[( ]|\[(Http(Get|Post|Put|Delete|Patch)|Route)|@(app|router|bp|api|blueprint)\.(get|post|put|delete|patch|route)\(|(app|router|server|routes|api)\.(get|post|put|delete|patch|all|route)\(|(r|e|g|mux|router|app)\.(GET|POST|PUT|DELETE|PATCH|Handle|HandleFunc|Group)\(|(re_)?path\(.*views|Route::(get|post|put|delete|patch|resource)|@(Get|Post|Put|Delete|Patch|Controller)\(|^[[:space:]]*(get|post|put|patch|delete|resources?)[[:space:]]+[:"'"'"'/]|Map(Get|Post|Put|Delete)\(|^[[:space:]]*\.(get|post|put|patch|delete)\([[:space:]]*["'"'"'`/]'
export R_OUT='fetch\(|axios|HttpClient|RestTemplate|WebClient|OkHttp|Retrofit|@FeignClient|requests\.(get|post|put|delete|request|Session)|httpx\.|urllib|http\.(Get|Post|NewRequest)|Net::HTTP|Faraday|HTTParty|Guzzle|curl_init|got\(|superagent'
export R_RPC='grpc|Grpc|gRPC|@GrpcService|protobuf|thrift|Thrift|jsonrpc|JsonRpc|trpc|SoapClient|@WebService|WCF|ServiceContract|graphql|GraphQL|@Query\(\)|@Mutation|@Resolver'
export R_MSG='[Kk]afka|@KafkaListener|[Rr]abbit|amqp|AMQP|@RabbitListener|[Ss][Qq][Ss]|[Ss][Nn][Ss]|[Pp]ub[Ss]ub|[Nn][Aa][Tt][Ss]|@JmsListener|[Jj][Mm][Ss]|EventBridge|ServiceBus|EventHub|\.publish\(|\.subscribe\(|\.emit\(|EventEmitter|@EventListener|@StreamListener|MessageHandler|[Cc]onsumer|[Pp]roducer|[Oo]utbox'
export R_SCH='@Scheduled|[Cc]ron|setInterval\(|celery|Celery|@periodic_task|Quartz|BackgroundService|IHostedService|[Ss]idekiq|[Rr]esque|[Bb]ull[MQ(]|agenda|APScheduler|schedule\.every'
export R_CLI='argparse|@click|click\.|typer|commander|yargs|cobra\.Command|flag\.(String|Int|Bool|Parse)|picocli|@Command\(|clap::|os\.Args|sys\.argv|process\.argv|System\.CommandLine|Thor|OptionParser|getopt'
export R_DB='SELECT[[:space:]].*FROM|INSERT[[:space:]]+INTO|UPDATE[[:space:]]+[A-Za-z_."`]+[[:space:]]+SET|DELETE[[:space:]]+FROM|@Entity|@Table|@Repository|JpaRepository|CrudRepository|@Query|jdbcTemplate|JdbcTemplate|EntityManager|\.objects\.|session\.(query|add|execute)|db\.Model|prisma\.|knex|sequelize|Sequelize|TypeORM|getRepository|createQueryBuilder|mongoose|\.collection\(|gorm|sqlx|database/sql|DbContext|DbSet<|ActiveRecord|ApplicationRecord|[Rr]edis[A-Z.(]|[Cc]ache(able|Manager)'
export R_FILE='open\(|fopen|FileReader|FileWriter|FileInputStream|FileOutputStream|readFile|writeFile|createReadStream|createWriteStream|Files\.(read|write|new|lines)|os\.(Open|Create|ReadFile|WriteFile)|ioutil\.|csv\.|CSV|xlsx|XSSF|openpyxl|pandas\.read|read_csv|to_csv|parquet|Parquet|ZipFile|S3Client|putObject|getObject|upload_file|BlobClient|sftp|SFTP'
find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name .venv -o -name venv \
  -o -name dist -o -name build -o -name target -o -name test -o -name tests -o -name __tests__ \
  -o -name spec -o -name '*.test.*' -o -name '*.spec.*' -o -name '*_test.*' -o -name '*Test.java' \
  -o -name '*Tests.java' -o -name '*Tests.cs' -o -name 'test_*.py' -o -name '*.min.js' -o -name '*.lock' \
  -o -name '*-lock.json' -o -name '*.md' \) -prune -o -type f -size -1024k -print0 \
  | xargs -0 -r grep -HIE "$R_HTTP|$R_OUT|$R_RPC|$R_MSG|$R_SCH|$R_CLI|$R_DB|$R_FILE" 2>/dev/null \
  | TOP="$TOP" awk '
      BEGIN { split("HTTP OUT RPC MSG SCH CLI DB FILE", K, " ")
              split("http-routes outbound-http rpc-graphql messaging scheduling cli data-access file-io", N, " ") }
      { i = match($0, /:/); f = substr($0, 1, i - 1); t = substr($0, i + 1)
        for (j = 1; j <= 8; j++) if (t ~ ENVIRON["R_" K[j]]) { c[j, f]++; tot[j]++; files[j, f] = 1 } }
      END {
        top = ENVIRON["TOP"] + 0
        for (j = 1; j <= 8; j++) {
          printf "== %s: %d lines\n", N[j], tot[j]
          cmd = "sort -t \"\t\" -k1,1nr | head -n " top
          for (key in files) { split(key, p, SUBSEP); if (p[1] == j) printf "%d\t%s\n", c[key], p[2] | cmd }
          close(cmd); print ""
        }
      }'

# The bundled data sets as the R reference scripts read them (sourced by quantiles_na.R and km_logrank.R): each one's
# time and event columns, the event column's codes that mean an event, and the group columns compared.
bundled <- "dpsurv_core/data/bundled"

datasets <- list(
  lung = list(time = "time", event = "status", codes = 1, groups = c("sex", "ph.ecog", "inst")),
  kidney = list(time = "time", event = "status", codes = 1, groups = c("sex", "disease")),
  leukemia = list(time = "time", event = "status", codes = 1, groups = c("x")),
  gehan = list(time = "time", event = "cens", codes = 1, groups = c("treat")),
  mgus2 = list(time = "futime", event = "death", codes = 1, groups = c("sex")),
  myeloid = list(time = "futime", event = "death", codes = 1, groups = c("trt", "sex", "flt3")),
  ovarian = list(time = "futime", event = "fustat", codes = 1, groups = c("rx", "resid.ds", "ecog.ps")),
  stanford2 = list(time = "time", event = "status", codes = 1, groups = character(0)),
  veteran = list(time = "time", event = "status", codes = 1, groups = c("trt", "celltype", "prior")),
  pbc = list(time = "time", event = "status", codes = 2, groups = c("sex", "trt", "edema", "stage")),
  transplant = list(time = "futime", event = "event", codes = "death", groups = c("sex", "abo")),
  flchain = list(time = "futime", event = "death", codes = 1, groups = c("sex", "flc.grp", "mgus"))
)

read_bundled <- function(name) {
  # the data set with .time and .event (1 = event), rows with a missing time or event dropped
  spec <- datasets[[name]]
  d <- read.csv(file.path(bundled, paste0(name, ".csv")), stringsAsFactors = FALSE)
  d$.time <- d[[spec$time]]
  d$.event <- as.integer(as.character(d[[spec$event]]) %in% as.character(spec$codes))
  d[!is.na(d$.time) & !is.na(d[[spec$event]]), ]
}
